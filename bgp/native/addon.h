// What both addons here share: a failed system call thrown as node:net's errors are (message,
// errno and its symbolic code), a bad argument thrown as a TypeError, and close(fd) for a socket
// that never reached Node. Included by tcp_md5.c and bfd_socket.c, after _GNU_SOURCE
// (strerrorname_np).
#ifndef PODROUTE_BGP_ADDON_H
#define PODROUTE_BGP_ADDON_H

#include <node_api.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline napi_value throw_errno(napi_env env, const char *what, int e) {
  char msg[320];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(e));
  napi_value err, code, text;
  napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &text);
  napi_create_error(env, NULL, text, &err);
  napi_create_int32(env, e, &code);
  napi_set_named_property(env, err, "errno", code);
  // The symbolic name too, as node:net's errors carry it (EADDRNOTAVAIL, EADDRINUSE, …).
  const char *name = strerrorname_np(e);
  if (name != NULL) {
    napi_value n;
    napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &n);
    napi_set_named_property(env, err, "code", n);
  }
  napi_throw(env, err);
  return NULL;
}

static inline napi_value throw_text(napi_env env, const char *msg) {
  napi_throw_type_error(env, NULL, msg);
  return NULL;
}

// close(fd), the addon's `close`.
static inline napi_value close_fd(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd = -1;
  napi_get_value_int32(env, argv[0], &fd);
  if (fd >= 0) close(fd);
  return NULL;
}

#endif
