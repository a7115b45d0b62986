// The UDP sockets of single-hop BFD (RFC 5881): every packet sent at TTL (hop limit) 255, and
// every packet that arrives with less dropped by the kernel (RFC 5881 §5, the GTSM of RFC
// 5082). Linux honours IP_MINTTL on TCP sockets only, and Node cannot read a datagram's TTL
// (IP_RECVTTL needs recvmsg), so the check is a socket filter: four instructions of classic
// BPF that read the TTL from the IP header before the datagram is queued. dgram takes the
// descriptor over (socket.bind({ fd })); nothing else lives here.
#define _GNU_SOURCE
#include "addon.h"
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/filter.h>
#include <stdbool.h>

static int set_int(int fd, int level, int name, int value) {
  return setsockopt(fd, level, name, &value, sizeof value);
}

// Accepts a datagram whose IPv4 TTL (octet 8 of the header) or IPv6 Hop Limit (octet 7) is
// at least min_ttl; drops it otherwise, before it reaches the socket's queue.
static int attach_ttl_filter(int fd, int family, int min_ttl) {
  struct sock_filter code[] = {
    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, (uint32_t)(SKF_NET_OFF + (family == 4 ? 8 : 7))),
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)min_ttl, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
    BPF_STMT(BPF_RET | BPF_K, 0),
  };
  struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
  return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog);
}

// udpSocket(family 4|6, address, port, minTtl, reuseAddress) -> fd: a non-blocking UDP socket
// sending at TTL 255, taking only packets whose TTL is at least minTtl (0: any), bound to
// address:port. reuseAddress lets a socket on one address share the port with the wildcard's,
// so that packets to that address reach it and say which local address they were sent to.
static napi_value udp_socket(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 5) return throw_text(env, "udpSocket(family, address, port, minTtl, reuseAddress)");
  bool reuse = false;
  napi_get_value_bool(env, argv[4], &reuse);
  int32_t family = 0, port = -1, min_ttl = 0;
  char address[64];
  size_t alen;
  napi_get_value_int32(env, argv[0], &family);
  napi_get_value_int32(env, argv[2], &port);
  napi_get_value_int32(env, argv[3], &min_ttl);
  if (family != 4 && family != 6) return throw_text(env, "udpSocket: family must be 4 or 6");
  if (port < 0 || port > 65535) return throw_text(env, "udpSocket: port must be 0..65535");
  if (min_ttl < 0 || min_ttl > 255) return throw_text(env, "udpSocket: minTtl must be 0..255");
  if (napi_get_value_string_utf8(env, argv[1], address, sizeof address, &alen) != napi_ok) {
    return throw_text(env, "udpSocket: address must be a string");
  }
  struct sockaddr_storage ss;
  socklen_t sslen;
  memset(&ss, 0, sizeof ss);
  if (family == 4) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, address, &a->sin_addr) != 1) return throw_text(env, "udpSocket: not an IPv4 address");
    sslen = sizeof *a;
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    // A link-local address names its interface (fe80::1%eth0): the scope the bind needs.
    char *zone = strchr(address, '%');
    if (zone != NULL) {
      *zone++ = 0;
      a->sin6_scope_id = if_nametoindex(zone);
      if (a->sin6_scope_id == 0) return throw_errno(env, "if_nametoindex", errno);
    }
    if (inet_pton(AF_INET6, address, &a->sin6_addr) != 1) return throw_text(env, "udpSocket: not an IPv6 address");
    sslen = sizeof *a;
  }
  int fd = socket(family == 4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return throw_errno(env, "socket", errno);
  int r = 0;
  const char *what = "setsockopt(SO_REUSEADDR)";
  if (reuse) r = set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1);
  if (r == 0 && family == 4) {
    what = "setsockopt(IP_TTL)";
    r = set_int(fd, IPPROTO_IP, IP_TTL, 255);
  } else if (r == 0) {
    what = "setsockopt(IPV6_V6ONLY)";
    r = set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
    if (r == 0) {
      what = "setsockopt(IPV6_UNICAST_HOPS)";
      r = set_int(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, 255);
    }
  }
  if (r == 0 && min_ttl > 0) {
    what = "setsockopt(SO_ATTACH_FILTER)";
    r = attach_ttl_filter(fd, family, min_ttl);
  }
  if (r == 0) {
    what = "bind";
    r = bind(fd, (struct sockaddr *)&ss, sslen);
  }
  if (r < 0) {
    int e = errno;
    close(fd);
    return throw_errno(env, what, e);
  }
  napi_value out;
  napi_create_int32(env, fd, &out);
  return out;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor d[] = {
    {"udpSocket", NULL, udp_socket, NULL, NULL, NULL, napi_default, NULL},
    {"close", NULL, close_fd, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof d / sizeof d[0], d);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
