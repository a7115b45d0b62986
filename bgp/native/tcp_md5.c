// TCP-MD5 (RFC 2385) for BGP sessions: Node cannot set TCP_MD5SIG, so this sets it on a
// socket Node already owns (a listener, per peer address) and makes the socket an outgoing
// session starts from, with its key set before the SYN. Node's net.Socket then takes that
// descriptor over and connects it; nothing else of a session lives here. Sessions dialed from a
// given local address come from here too, keyed or not: Node cannot set IP_BIND_ADDRESS_NO_PORT.
// So do the TTL options of a session (GTSM, RFC 5082: IP_TTL 255 and IP_MINTTL), which Node
// cannot set on a TCP socket either: on the socket it dials before the SYN, on one it accepted.
#define _GNU_SOURCE
#include "addon.h"
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#ifndef IPV6_MINHOPCOUNT
#define IPV6_MINHOPCOUNT 73
#endif

// The TTL (IPv6: hop limit) of what `fd` sends, and the least it accepts (GTSM); 0 leaves either
// as it is, a TTL of -1 puts back the kernel's default. `v6` is the peer's family: an IPv4 peer on an IPv6 socket (v4-mapped) takes the IPv4
// options, which the kernel applies to such a socket too.
static int set_ttl(int fd, int v6, int ttl, int min_ttl, const char **why) {
  if (ttl != 0) {
    int r = v6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof ttl) : setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);
    if (r < 0) {
      *why = v6 ? "setsockopt(IPV6_UNICAST_HOPS)" : "setsockopt(IP_TTL)";
      return -1;
    }
  }
  if (min_ttl > 0) {
    int r = v6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_MINHOPCOUNT, &min_ttl, sizeof min_ttl)
               : setsockopt(fd, IPPROTO_IP, IP_MINTTL, &min_ttl, sizeof min_ttl);
    if (r < 0) {
      *why = v6 ? "setsockopt(IPV6_MINHOPCOUNT)" : "setsockopt(IP_MINTTL)";
      return -1;
    }
  }
  return 0;
}

// An IPv6 address, not an IPv4 one nor a v4-mapped one (::ffff:10.0.0.1).
static int is_v6(const char *address) {
  return strchr(address, ':') != NULL && strchr(address, '.') == NULL;
}

// An address without its zone (fe80::1%eth0): the key then holds on every interface.
static int read_string(napi_env env, napi_value v, char *out, size_t size, size_t *len) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_string) return -1;
  if (napi_get_value_string_utf8(env, v, out, size, len) != napi_ok) return -1;
  return 0;
}

// Fills `ss` with `text` as the socket of family `domain` sees it: on an IPv6 socket an IPv4
// peer is its v4-mapped address (the kernel files that key as IPv4).
static int sockaddr_for(int domain, const char *text, struct sockaddr_storage *ss, socklen_t *sslen) {
  char host[64];
  snprintf(host, sizeof host, "%s", text);
  char *zone = strchr(host, '%');
  if (zone) *zone = 0;
  struct in_addr a4;
  struct in6_addr a6;
  memset(ss, 0, sizeof *ss);
  if (inet_pton(AF_INET, host, &a4) == 1) {
    if (domain == AF_INET6) {
      struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
      s6->sin6_family = AF_INET6;
      s6->sin6_addr.s6_addr[10] = 0xff;
      s6->sin6_addr.s6_addr[11] = 0xff;
      memcpy(&s6->sin6_addr.s6_addr[12], &a4, 4);
      *sslen = sizeof *s6;
    } else {
      struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
      s4->sin_family = AF_INET;
      s4->sin_addr = a4;
      *sslen = sizeof *s4;
    }
    return 0;
  }
  if (inet_pton(AF_INET6, host, &a6) == 1) {
    if (domain == AF_INET) return -1;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = a6;
    *sslen = sizeof *s6;
    return 0;
  }
  return -1;
}

// Sets the key for `address` on `fd` (an empty key removes it). prefixLength < 0: that one
// address (TCP_MD5SIG); otherwise every address of the prefix (TCP_MD5SIG_EXT).
static int set_key(int fd, const char *address, const char *key, size_t keylen, int prefix_length, const char **why) {
  int domain = 0;
  socklen_t dlen = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) < 0) {
    *why = "getsockopt(SO_DOMAIN)";
    return -1;
  }
  struct tcp_md5sig sig;
  memset(&sig, 0, sizeof sig);
  socklen_t sslen;
  if (sockaddr_for(domain, address, &sig.tcpm_addr, &sslen) < 0) {
    *why = "address";
    errno = EAFNOSUPPORT;
    return -1;
  }
  sig.tcpm_keylen = (uint16_t)keylen;
  memcpy(sig.tcpm_key, key, keylen);
  int opt = TCP_MD5SIG;
  if (prefix_length >= 0) {
    opt = TCP_MD5SIG_EXT;
    sig.tcpm_flags = TCP_MD5SIG_FLAG_PREFIX;
    // A v4-mapped range on an IPv6 socket keeps its IPv4 length: the kernel files it as IPv4.
    sig.tcpm_prefixlen = (uint8_t)prefix_length;
  }
  if (setsockopt(fd, IPPROTO_TCP, opt, &sig, sizeof sig) < 0) {
    *why = "setsockopt(TCP_MD5SIG)";
    return -1;
  }
  return 0;
}

// setKey(fd, address, key, prefixLength) — key "" removes; prefixLength -1 for one address.
static napi_value md5_set_key(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 4) return throw_text(env, "setKey(fd, address, key, prefixLength)");
  int32_t fd = -1, prefix_length = -1;
  char address[64], key[TCP_MD5SIG_MAXKEYLEN + 2];
  size_t alen, klen;
  napi_get_value_int32(env, argv[0], &fd);
  napi_get_value_int32(env, argv[3], &prefix_length);
  if (read_string(env, argv[1], address, sizeof address, &alen) < 0) return throw_text(env, "setKey: address must be a string");
  if (read_string(env, argv[2], key, sizeof key, &klen) < 0) return throw_text(env, "setKey: key must be a string");
  if (klen > TCP_MD5SIG_MAXKEYLEN) return throw_text(env, "setKey: the key is longer than 80 octets");
  const char *why = "";
  if (set_key(fd, address, key, klen, prefix_length, &why) < 0) {
    // Removing a key that is not there is not an error: the peer was never keyed.
    if (klen == 0 && errno == ENOENT) return NULL;
    return throw_errno(env, why, errno);
  }
  return NULL;
}

// A non-blocking TCP socket of the peer's family, with the key for the peer set when one is
// given (klen > 0) and bound to the local address when one is given. It binds with
// IP_BIND_ADDRESS_NO_PORT: the source port is then chosen at connect, by the whole 4-tuple.
// A plain bind() must find a port free of every socket on that address, TIME_WAIT included,
// so an agent restarted at a few thousand peers spent most of its start searching for ports
// (and fails outright once the ephemeral range is spent on one address). Returns the fd, or
// NULL with an exception pending.
static napi_value session_socket(napi_env env, const char *address, const char *key, size_t klen, const char *local, int ttl, int min_ttl) {
  int domain = strchr(address, ':') ? AF_INET6 : AF_INET;
  int fd = socket(domain, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return throw_errno(env, "socket", errno);
  const char *why = "";
  if (klen > 0 && set_key(fd, address, key, klen, -1, &why) < 0) {
    int e = errno;
    close(fd);
    return throw_errno(env, why, e);
  }
  if (set_ttl(fd, domain == AF_INET6, ttl, min_ttl, &why) < 0) {
    int e = errno;
    close(fd);
    return throw_errno(env, why, e);
  }
  if (local != NULL) {
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (sockaddr_for(domain, local, &ss, &sslen) < 0) {
      close(fd);
      return throw_text(env, "socket: localAddress is not of the peer's family");
    }
    int one = 1;
    if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one) < 0) {
      int e = errno;
      close(fd);
      return throw_errno(env, "setsockopt(IP_BIND_ADDRESS_NO_PORT)", e);
    }
    if (bind(fd, (struct sockaddr *)&ss, sslen) < 0) {
      int e = errno;
      close(fd);
      return throw_errno(env, "bind(localAddress)", e);
    }
  }
  napi_value r;
  napi_create_int32(env, fd, &r);
  return r;
}

// socket(peerAddress, key, localAddress|null) -> fd: a session socket with the key for the
// peer set. The caller connects it (net.Socket({ fd }).connect), so the SYN already carries
// the option.
static napi_value md5_socket(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 3) return throw_text(env, "socket(peerAddress, key, localAddress)");
  char address[64], local[64], key[TCP_MD5SIG_MAXKEYLEN + 2];
  size_t alen, klen, llen = 0;
  if (read_string(env, argv[0], address, sizeof address, &alen) < 0) return throw_text(env, "socket: peerAddress must be a string");
  if (read_string(env, argv[1], key, sizeof key, &klen) < 0) return throw_text(env, "socket: key must be a string");
  if (klen == 0 || klen > TCP_MD5SIG_MAXKEYLEN) return throw_text(env, "socket: the key must be 1..80 octets");
  napi_valuetype t;
  napi_typeof(env, argv[2], &t);
  int has_local = t == napi_string;
  if (has_local && read_string(env, argv[2], local, sizeof local, &llen) < 0) return throw_text(env, "socket: localAddress");
  return session_socket(env, address, key, klen, has_local ? local : NULL, 0, 0);
}

// dialSocket(peerAddress, localAddress) -> fd: an unkeyed session socket bound to the local
// address (see session_socket for why Node's own bind-then-connect is not used).
static napi_value dial_socket(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2) return throw_text(env, "dialSocket(peerAddress, localAddress)");
  char address[64], local[64];
  size_t alen, llen;
  if (read_string(env, argv[0], address, sizeof address, &alen) < 0) return throw_text(env, "dialSocket: peerAddress must be a string");
  if (read_string(env, argv[1], local, sizeof local, &llen) < 0) return throw_text(env, "dialSocket: localAddress must be a string");
  return session_socket(env, address, NULL, 0, local, 0, 0);
}

// sessionSocket(peerAddress, key, localAddress|null, ttl, minTtl) -> fd: a session socket with
// every option a session may ask for set before the SYN: the key ("" for none), the local
// address, the TTL it sends and the least TTL it accepts (0 for the kernel's).
static napi_value session_socket_all(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 5) return throw_text(env, "sessionSocket(peerAddress, key, localAddress, ttl, minTtl)");
  char address[64], local[64], key[TCP_MD5SIG_MAXKEYLEN + 2];
  size_t alen, klen, llen = 0;
  int32_t ttl = 0, min_ttl = 0;
  if (read_string(env, argv[0], address, sizeof address, &alen) < 0) return throw_text(env, "sessionSocket: peerAddress must be a string");
  if (read_string(env, argv[1], key, sizeof key, &klen) < 0) return throw_text(env, "sessionSocket: key must be a string");
  if (klen > TCP_MD5SIG_MAXKEYLEN) return throw_text(env, "sessionSocket: the key is longer than 80 octets");
  napi_valuetype t;
  napi_typeof(env, argv[2], &t);
  int has_local = t == napi_string;
  if (has_local && read_string(env, argv[2], local, sizeof local, &llen) < 0) return throw_text(env, "sessionSocket: localAddress");
  napi_get_value_int32(env, argv[3], &ttl);
  napi_get_value_int32(env, argv[4], &min_ttl);
  if (ttl < 0 || ttl > 255 || min_ttl < 0 || min_ttl > 255) return throw_text(env, "sessionSocket: ttl and minTtl are 0..255");
  return session_socket(env, address, key, klen, has_local ? local : NULL, ttl, min_ttl);
}

// setTtl(fd, peerAddress, ttl, minTtl): the TTL options on a socket Node owns (an accepted one).
static napi_value set_ttl_js(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 4) return throw_text(env, "setTtl(fd, peerAddress, ttl, minTtl)");
  int32_t fd = -1, ttl = 0, min_ttl = 0;
  char address[64];
  size_t alen;
  napi_get_value_int32(env, argv[0], &fd);
  if (read_string(env, argv[1], address, sizeof address, &alen) < 0) return throw_text(env, "setTtl: peerAddress must be a string");
  napi_get_value_int32(env, argv[2], &ttl);
  napi_get_value_int32(env, argv[3], &min_ttl);
  if (ttl < -1 || ttl > 255 || min_ttl < 0 || min_ttl > 255) return throw_text(env, "setTtl: ttl is -1..255, minTtl 0..255");
  const char *why = "";
  if (set_ttl(fd, is_v6(address), ttl, min_ttl, &why) < 0) return throw_errno(env, why, errno);
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor d[] = {
    {"setKey", NULL, md5_set_key, NULL, NULL, NULL, napi_default, NULL},
    {"socket", NULL, md5_socket, NULL, NULL, NULL, napi_default, NULL},
    {"dialSocket", NULL, dial_socket, NULL, NULL, NULL, napi_default, NULL},
    {"sessionSocket", NULL, session_socket_all, NULL, NULL, NULL, napi_default, NULL},
    {"setTtl", NULL, set_ttl_js, NULL, NULL, NULL, napi_default, NULL},
    {"close", NULL, close_fd, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof d / sizeof d[0], d);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
