// The only C in podroute: Node has no AF_NETLINK sockets. This file opens one, sends a
// buffer that holds many netlink messages, and reads replies into a Buffer (a dump's off the
// event loop, on libuv's thread pool). Every message
// is built and parsed in TypeScript (felix/netlink/), but for flow logs' (flows.c). It also enters a network namespace
// for the length of one synchronous call, so one process can drive several namespaces, and
// wakes the event loop when a socket that joined multicast groups has something queued.
#define _GNU_SOURCE
#include <node_api.h>
#include <uv.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <sched.h>
#include <poll.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#include <string.h>
#include <stdio.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

static napi_value throw_errno(napi_env env, const char *what) {
  char msg[256];
  int e = errno;
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(e));
  napi_value err, code, text;
  napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &text);
  napi_create_error(env, NULL, text, &err);
  napi_create_int32(env, e, &code);
  napi_set_named_property(env, err, "errno", code);
  napi_throw(env, err);
  return NULL;
}

static napi_value num(napi_env env, double v) {
  napi_value r;
  napi_create_double(env, v, &r);
  return r;
}

static int arg_int(napi_env env, napi_value v) {
  int32_t r = -1;
  napi_get_value_int32(env, v, &r);
  return r;
}

// open(protocol, bufferBytes) -> fd. Large buffers: a batch of acks must fit in the
// receive queue, or the kernel drops them with ENOBUFS.
static napi_value nl_open(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int proto = arg_int(env, argv[0]);
  int bytes = arg_int(env, argv[1]);
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto);
  if (fd < 0) return throw_errno(env, "socket(AF_NETLINK)");
  // FORCE variants need CAP_NET_ADMIN; fall back to the capped ones.
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) < 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) < 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  int one = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  struct sockaddr_nl sa;
  memset(&sa, 0, sizeof sa);
  sa.nl_family = AF_NETLINK;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return throw_errno(env, "bind(AF_NETLINK)");
  }
  return num(env, fd);
}

// send(fd, buffer, length) -> bytes sent, to the kernel (pid 0).
static napi_value nl_send(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int fd = arg_int(env, argv[0]);
  void *data;
  size_t len;
  napi_get_buffer_info(env, argv[1], &data, &len);
  int want = arg_int(env, argv[2]);
  if (want >= 0 && (size_t)want < len) len = (size_t)want;
  struct sockaddr_nl sa;
  memset(&sa, 0, sizeof sa);
  sa.nl_family = AF_NETLINK;
  ssize_t n;
  do n = sendto(fd, data, len, 0, (struct sockaddr *)&sa, sizeof sa);
  while (n < 0 && errno == EINTR);
  if (n < 0) return throw_errno(env, "sendto(netlink)");
  return num(env, (double)n);
}

// Waits up to timeoutMs for the first datagram, then takes every datagram already queued while
// 64 KiB of room is left. Returns the bytes read (0: none came in time), or -errno. Touches no
// JavaScript value, so a worker thread may run it (readAsync).
static ssize_t recv_batch(int fd, char *data, size_t len, int timeout) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int r;
  do r = poll(&p, 1, timeout);
  while (r < 0 && errno == EINTR);
  if (r < 0) return -errno;
  if (r == 0) return 0;
  size_t off = 0;
  while (len - off >= 65536) {
    ssize_t n = recv(fd, data + off, len - off, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (off > 0) break;  // report what we have; the error shows again on the next call
      return -errno;
    }
    if (n == 0) break;
    off += (size_t)n;
  }
  return (ssize_t)off;
}

// recv(fd, buffer, timeoutMs) -> bytes, so one call drains a whole batch of acks. rtnetlink
// answers in the sender's context, so by the time sendto returns the replies are queued; the
// wait is only a guard.
static napi_value nl_recv(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int fd = arg_int(env, argv[0]);
  char *data;
  size_t len;
  napi_get_buffer_info(env, argv[1], (void **)&data, &len);
  int timeout = arg_int(env, argv[2]);
  ssize_t got = recv_batch(fd, data, len, timeout);
  if (got < 0) {
    errno = (int)-got;
    return throw_errno(env, "recv(netlink)");
  }
  return num(env, (double)got);
}

// A send and a read done on libuv's thread pool: a dump's request makes the kernel walk its
// table inside sendto (ctnetlink's conntrack hash: milliseconds, whatever the filter keeps), and
// each read of a long dump makes it fill the next part, so neither may run on the event loop.
typedef struct read_async read_async_t;
static void read_async_io(read_async_t *r);

struct read_async {
  napi_async_work work;
  napi_ref rx_ref, request_ref, callback;
  int fd, timeout;
  char *rx;
  size_t rx_len;
  char *request;
  size_t request_len;
  ssize_t result;  // bytes read, or -errno
  int failed_send;
  int loop_cpu;  // where the event loop's thread ran when it asked, or -1
};

// Moves the calling thread off `cpu` (when another is allowed) and says what it was allowed
// before. The kernel's walk does not yield its CPU (no preemption in kernel code on a
// PREEMPT_NONE kernel): the event loop's thread, woken on the CPU it slept on, would wait the
// whole walk behind it whenever no other CPU is idle.
static int leave_cpu(int cpu, cpu_set_t *before) {
  if (cpu < 0 || sched_getaffinity(0, sizeof *before, before) < 0) return 0;
  cpu_set_t others = *before;
  CPU_CLR(cpu, &others);
  if (CPU_COUNT(&others) == 0 || CPU_EQUAL(&others, before)) return 0;
  return sched_setaffinity(0, sizeof others, &others) == 0;
}

static void read_async_execute(napi_env env, void *data) {
  (void)env;
  read_async_t *r = data;
  cpu_set_t before;
  int moved = leave_cpu(r->loop_cpu, &before);
  read_async_io(r);
  // A pool thread serves others after this read: as it was.
  if (moved) sched_setaffinity(0, sizeof before, &before);
}

static void read_async_io(read_async_t *r) {
  if (r->request) {
    struct sockaddr_nl sa;
    memset(&sa, 0, sizeof sa);
    sa.nl_family = AF_NETLINK;
    ssize_t n;
    do n = sendto(r->fd, r->request, r->request_len, 0, (struct sockaddr *)&sa, sizeof sa);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
      r->result = -errno;
      r->failed_send = 1;
      return;
    }
  }
  r->result = recv_batch(r->fd, r->rx, r->rx_len, r->timeout);
}

static void read_async_complete(napi_env env, napi_status status, void *data) {
  read_async_t *r = data;
  napi_value cb, global, argv[2];
  napi_get_reference_value(env, r->callback, &cb);
  napi_get_global(env, &global);
  // (errno, bytes): errno 0 and bytes 0 when nothing came in time; a failed send's errno negated.
  int err = status != napi_ok ? ECANCELED : r->result < 0 ? (int)-r->result : 0;
  napi_create_int32(env, r->failed_send ? -err : err, &argv[0]);
  napi_create_double(env, r->result > 0 ? (double)r->result : 0, &argv[1]);
  napi_delete_reference(env, r->rx_ref);
  if (r->request_ref) napi_delete_reference(env, r->request_ref);
  napi_delete_reference(env, r->callback);
  napi_delete_async_work(env, r->work);
  free(r);
  napi_value ignored;
  // An exception thrown by the callback goes to the process, as a timer's would.
  if (cb && napi_call_function(env, global, cb, 2, argv, &ignored) == napi_pending_exception) {
    napi_value e;
    napi_get_and_clear_last_exception(env, &e);
    napi_fatal_exception(env, e);
  }
}

// readAsync(fd, rx, length, timeoutMs, request | null, callback(errno, bytes)): sends `request`
// (when given) and reads as recv does into rx[0, length), off the event loop. Neither buffer may
// be touched until the callback.
static napi_value nl_read_async(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  read_async_t *r = calloc(1, sizeof *r);
  if (!r) return throw_errno(env, "calloc");
  r->fd = arg_int(env, argv[0]);
  size_t len;
  napi_get_buffer_info(env, argv[1], (void **)&r->rx, &len);
  int want = arg_int(env, argv[2]);
  r->rx_len = want >= 0 && (size_t)want < len ? (size_t)want : len;
  r->timeout = arg_int(env, argv[3]);
  r->loop_cpu = sched_getcpu();
  napi_valuetype t;
  napi_typeof(env, argv[4], &t);
  if (t == napi_object) {
    napi_get_buffer_info(env, argv[4], (void **)&r->request, &r->request_len);
    napi_create_reference(env, argv[4], 1, &r->request_ref);
  }
  napi_create_reference(env, argv[1], 1, &r->rx_ref);
  napi_create_reference(env, argv[5], 1, &r->callback);
  napi_value name;
  napi_create_string_utf8(env, "netlink.readAsync", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, NULL, name, read_async_execute, read_async_complete, r, &r->work);
  napi_queue_async_work(env, r->work);
  return NULL;
}

// join(fd, group): subscribes the socket to an rtnetlink multicast group (RTNLGRP_*), so the
// kernel queues a copy of every change of that kind; recv(fd, buf, 0) then drains them.
static napi_value nl_join(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int fd = arg_int(env, argv[0]);
  int group = arg_int(env, argv[1]);
  if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) < 0)
    return throw_errno(env, "setsockopt(NETLINK_ADD_MEMBERSHIP)");
  return NULL;
}

static napi_value nl_close(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  close(arg_int(env, argv[0]));
  return NULL;
}

// enterNetns(path) -> fd of the namespace this thread was in, for leaveNetns. Only the
// calling thread moves; callers keep the switch inside one synchronous stretch of code.
static napi_value nl_enter_netns(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char path[4096];
  size_t plen;
  napi_get_value_string_utf8(env, argv[0], path, sizeof path, &plen);
  int old = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (old < 0) return throw_errno(env, "open(/proc/thread-self/ns/net)");
  int target = open(path, O_RDONLY | O_CLOEXEC);
  if (target < 0) {
    int e = errno;
    close(old);
    errno = e;
    return throw_errno(env, path);
  }
  int r = setns(target, CLONE_NEWNET);
  int e = errno;
  close(target);
  if (r < 0) {
    close(old);
    errno = e;
    return throw_errno(env, "setns(CLONE_NEWNET)");
  }
  return num(env, old);
}

static napi_value nl_leave_netns(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int old = arg_int(env, argv[0]);
  int r = setns(old, CLONE_NEWNET);
  int e = errno;
  close(old);
  if (r < 0) {
    errno = e;
    return throw_errno(env, "setns(back)");
  }
  return NULL;
}

// A socket the event loop watches: libuv polls the fd and calls back on the loop's thread when
// the kernel queued something, so multicast readers sleep instead of draining on a timer.
typedef struct {
  uv_poll_t poll;
  napi_env env;
  napi_ref callback;
  int closing;
} watcher_t;

static void watch_closed(uv_handle_t *h) {
  free(h->data);
}

static void watch_ready(uv_poll_t *p, int status, int events) {
  (void)events;
  watcher_t *w = (watcher_t *)p->data;
  if (w->closing) return;
  napi_handle_scope scope;
  if (napi_open_handle_scope(w->env, &scope) != napi_ok) return;
  napi_value cb, global, arg, ignored;
  napi_get_reference_value(w->env, w->callback, &cb);
  napi_get_global(w->env, &global);
  napi_create_int32(w->env, status, &arg);
  if (cb) {
    napi_status st = napi_call_function(w->env, global, cb, 1, &arg, &ignored);
    // An exception thrown by the callback goes to the process, as a timer's would.
    if (st == napi_pending_exception) {
      napi_value e;
      napi_get_and_clear_last_exception(w->env, &e);
      napi_fatal_exception(w->env, e);
    }
  }
  napi_close_handle_scope(w->env, scope);
}

static void watch_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  (void)data;
}

// watch(fd, callback, keepAlive) -> handle: calls callback(status) each time fd is readable.
// Without keepAlive the watch does not keep the process running (as an unref'd timer).
static napi_value nl_watch(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int fd = arg_int(env, argv[0]);
  bool keep = false;
  if (argc > 2) napi_get_value_bool(env, argv[2], &keep);
  uv_loop_t *loop;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok) {
    errno = EINVAL;
    return throw_errno(env, "uv loop");
  }
  watcher_t *w = calloc(1, sizeof *w);
  if (!w) return throw_errno(env, "calloc");
  w->env = env;
  napi_create_reference(env, argv[1], 1, &w->callback);
  int r = uv_poll_init(loop, &w->poll, fd);
  if (r < 0) {
    napi_delete_reference(env, w->callback);
    free(w);
    errno = -r;
    return throw_errno(env, "uv_poll_init");
  }
  w->poll.data = w;
  uv_poll_start(&w->poll, UV_READABLE, watch_ready);
  if (!keep) uv_unref((uv_handle_t *)&w->poll);
  napi_value handle;
  napi_create_external(env, w, watch_finalize, NULL, &handle);
  return handle;
}

// unwatch(handle): stops and frees a watch; call before closing its fd.
static napi_value nl_unwatch(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  watcher_t *w = NULL;
  if (napi_get_value_external(env, argv[0], (void **)&w) != napi_ok || !w || w->closing) return NULL;
  w->closing = 1;
  uv_poll_stop(&w->poll);
  napi_delete_reference(env, w->callback);
  w->callback = NULL;
  uv_close((uv_handle_t *)&w->poll, watch_closed);
  return NULL;
}

// flows.c: a flow log socket's messages read into rows of numbers.
napi_value flows_read(napi_env env, napi_callback_info info);

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor d[] = {
    {"open", NULL, nl_open, NULL, NULL, NULL, napi_default, NULL},
    {"send", NULL, nl_send, NULL, NULL, NULL, napi_default, NULL},
    {"recv", NULL, nl_recv, NULL, NULL, NULL, napi_default, NULL},
    {"readAsync", NULL, nl_read_async, NULL, NULL, NULL, napi_default, NULL},
    {"close", NULL, nl_close, NULL, NULL, NULL, napi_default, NULL},
    {"join", NULL, nl_join, NULL, NULL, NULL, napi_default, NULL},
    {"watch", NULL, nl_watch, NULL, NULL, NULL, napi_default, NULL},
    {"unwatch", NULL, nl_unwatch, NULL, NULL, NULL, napi_default, NULL},
    {"enterNetns", NULL, nl_enter_netns, NULL, NULL, NULL, napi_default, NULL},
    {"leaveNetns", NULL, nl_leave_netns, NULL, NULL, NULL, napi_default, NULL},
    {"flowRead", NULL, flows_read, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof d / sizeof d[0], d);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
