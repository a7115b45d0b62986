// Flow logs' reader: drains a NETLINK_NETFILTER socket that carries conntrack events or
// nfnetlink_log packets and writes each message as one fixed row of numbers into a
// Float64Array, so JavaScript handles a batch of rows instead of walking attributes and
// formatting addresses per message. The layout is felix/flows/batch.ts's; keep them together.
#define _GNU_SOURCE
#include <node_api.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/netlink.h>

#define ROW 34
#define HEADER 2

// Row fields (felix/flows/batch.ts).
enum {
  F_KIND, F_PROTO, F_ID, F_STATUS, F_MARK, F_PACKETS, F_BYTES, F_FAMILY,
  F_A_SRC, F_A_DST = F_A_SRC + 4, F_A_SPORT = F_A_DST + 4, F_A_DPORT,
  F_B_SRC, F_B_DST = F_B_SRC + 4, F_B_SPORT = F_B_DST + 4, F_B_DPORT,
  F_PREFIX_AT, F_PREFIX_LEN, F_KEY, F_IFINDEX, F_NAME, F_START,
};
enum { KIND_NEW = 1, KIND_DESTROY = 2, KIND_PACKET = 3 };

#define SUBSYS_CTNETLINK 1
#define SUBSYS_ULOG 4

static uint32_t be32(const uint8_t *p) { return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]; }
static uint16_t be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static double be64(const uint8_t *p) { return (double)be32(p) * 4294967296.0 + (double)be32(p + 4); }

// A walk over the attributes in [p, end): each next_attr gives one's type, payload and length.
typedef struct {
  const uint8_t *p, *end;
} attrs_t;

static int next_attr(attrs_t *it, uint16_t *type, const uint8_t **value, uint16_t *len) {
  if (it->p + 4 > it->end) return 0;
  uint16_t l = *(const uint16_t *)it->p;
  if (l < 4 || it->p + l > it->end) return 0;
  *type = *(const uint16_t *)(it->p + 2) & NLA_TYPE_MASK;
  *value = it->p + 4;
  *len = l - 4;
  it->p += (l + 3) & ~3u;
  return 1;
}

#define FOR_ATTR(from, to, t, v, n) \
  uint16_t t, n;                    \
  const uint8_t *v;                 \
  for (attrs_t it_##t = {(from), (to)}; next_attr(&it_##t, &t, &v, &n);)

// A conntrack tuple (CTA_TUPLE_ORIG / REPLY): addresses, protocol, ports (ICMP: type, code).
static int read_tuple(const uint8_t *p, const uint8_t *end, double *row, int src, int dst, int sport, int dport) {
  int proto = -1, family = 0;
  FOR_ATTR(p, end, t, v, n) {
    if (t == 1) {  // CTA_TUPLE_IP
      FOR_ATTR(v, v + n, it, iv, in) {
        if ((it == 1 || it == 2) && in >= 4) {
          row[it == 1 ? src : dst] = be32(iv);
          family = 4;
        } else if ((it == 3 || it == 4) && in >= 16) {
          for (int i = 0; i < 4; i++) row[(it == 3 ? src : dst) + i] = be32(iv + 4 * i);
          family = 6;
        }
      }
    } else if (t == 2) {  // CTA_TUPLE_PROTO
      FOR_ATTR(v, v + n, pt, pv, pn) {
        if (pn < 1) continue;
        if (pt == 1) proto = pv[0];
        else if (pt == 2 && pn >= 2) row[sport] = be16(pv);
        else if (pt == 3 && pn >= 2) row[dport] = be16(pv);
        else if (pt == 5 || pt == 8) row[sport] = pv[0];  // ICMP(v6) type
        else if (pt == 6 || pt == 9) row[dport] = pv[0];  // ICMP(v6) code
      }
    }
  }
  if (proto < 0 || !family) return 0;
  row[F_PROTO] = proto;
  row[F_FAMILY] = family;
  return 1;
}

static void add_counters(const uint8_t *p, const uint8_t *end, double *row) {
  FOR_ATTR(p, end, t, v, n) {
    if (t == 1 && n >= 8) row[F_PACKETS] += be64(v);
    else if (t == 2 && n >= 8) row[F_BYTES] += be64(v);
  }
}

// A conntrack event's attributes: the original tuple into A, the reply's into B, the counters
// of both directions summed. Returns 3 when both tuples were read.
static int read_conntrack(const uint8_t *p, const uint8_t *end, double *row, int a, int b) {
  int ok = 0;
  FOR_ATTR(p, end, t, v, n) {
    if (t == 1) ok |= read_tuple(v, v + n, row, a, a + 4, a + 8, a + 9);  // CTA_TUPLE_ORIG
    else if (t == 2) ok |= read_tuple(v, v + n, row, b, b + 4, b + 8, b + 9) << 1;  // CTA_TUPLE_REPLY
    else if (t == 3 && n >= 4) row[F_STATUS] = be32(v);  // CTA_STATUS
    else if (t == 8 && n >= 4) row[F_MARK] = be32(v);  // CTA_MARK
    else if (t == 9 || t == 10) add_counters(v, v + n, row);  // CTA_COUNTERS_ORIG, _REPLY
    else if (t == 12 && n >= 4) row[F_ID] = be32(v);  // CTA_ID
    else if (t == 20) {  // CTA_TIMESTAMP (nf_conntrack_timestamp): its START, ns since the epoch
      FOR_ATTR(v, v + n, tt, tv, tn) if (tt == 1 && tn >= 8) row[F_START] = (double)(((uint64_t)be32(tv) << 32 | be32(tv + 4)) / 1000000);
    }
  }
  return ok;
}

// The IP packet an nflog message copied: its tuple (after DNAT, as the rule saw it) into A.
static int read_packet(const uint8_t *p, size_t n, double *row) {
  if (n < 20) return 0;
  int version = p[0] >> 4, proto;
  size_t l4;
  if (version == 4) {
    proto = p[9];
    row[F_A_SRC] = be32(p + 12);
    row[F_A_DST] = be32(p + 16);
    l4 = (size_t)(p[0] & 0x0f) * 4;
    row[F_BYTES] = be16(p + 2);
    row[F_FAMILY] = 4;
  } else if (version == 6 && n >= 40) {
    proto = p[6];
    for (int i = 0; i < 4; i++) {
      row[F_A_SRC + i] = be32(p + 8 + 4 * i);
      row[F_A_DST + i] = be32(p + 24 + 4 * i);
    }
    l4 = 40;
    row[F_BYTES] = be16(p + 4) + 40;
    row[F_FAMILY] = 6;
  } else return 0;
  row[F_PROTO] = proto;
  if ((proto == 6 || proto == 17 || proto == 132) && l4 + 4 <= n) {
    row[F_A_SPORT] = be16(p + l4);
    row[F_A_DPORT] = be16(p + l4 + 2);
  } else if ((proto == 1 || proto == 58) && l4 + 2 <= n) {
    row[F_A_SPORT] = p[l4];
    row[F_A_DPORT] = p[l4 + 1];
  }
  return 1;
}

// A number for a flow as the forward hook saw it (protocol, addresses, ports): FNV-1a over its
// words, 52 bits so that a double holds it exactly. The correlator joins an Allow's logged
// packet to its NEW by it, and compares the tuples on a match.
static double flow_key(const double *row, int src, int sport, int dst, int dport) {
  uint64_t h = 0xcbf29ce484222325ull;
  uint32_t w[11] = {(uint32_t)row[F_PROTO], (uint32_t)row[src], (uint32_t)row[src + 1], (uint32_t)row[src + 2],
                    (uint32_t)row[src + 3], (uint32_t)row[sport], (uint32_t)row[dst], (uint32_t)row[dst + 1],
                    (uint32_t)row[dst + 2], (uint32_t)row[dst + 3], (uint32_t)row[dport]};
  for (int i = 0; i < 11; i++)
    for (int b = 0; b < 4; b++) {
      h ^= (w[i] >> (8 * b)) & 0xff;
      h *= 0x100000001b3ull;
    }
  return (double)(h >> 12);
}

// A number for what names a flow apart from its client's port: protocol, client, the address
// and port it sent to, and where a DNAT sent it (B's source, 0 for a logged packet). The agent
// caches a flow's naming by it (and compares the fields on a match).
static double name_key(const double *row) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 14; i++) {
    static const int at[14] = {F_PROTO, F_A_SRC, F_A_SRC + 1, F_A_SRC + 2, F_A_SRC + 3, F_A_DST, F_A_DST + 1,
                               F_A_DST + 2, F_A_DST + 3, F_A_DPORT, F_B_SRC, F_B_SRC + 1, F_B_SRC + 2, F_B_SRC + 3};
    uint32_t w = (uint32_t)row[at[i]];
    for (int b = 0; b < 4; b++) {
      h ^= (w >> (8 * b)) & 0xff;
      h *= 0x100000001b3ull;
    }
  }
  h ^= (uint32_t)row[F_B_SPORT];
  h *= 0x100000001b3ull;
  return (double)(h >> 12);
}

// One netlink message into a row; 0 when it is none of ours (or malformed).
static int read_message(const uint8_t *base, const uint8_t *m, const uint8_t *end, double *row) {
  uint16_t type = *(const uint16_t *)(m + 4);
  const uint8_t *attrs = m + 20;
  memset(row, 0, ROW * sizeof *row);
  if (attrs > end) return 0;
  if (type >> 8 == SUBSYS_CTNETLINK) {
    int msg = type & 0xff;
    if (msg != 0 && msg != 2) return 0;
    row[F_KIND] = msg == 0 ? KIND_NEW : KIND_DESTROY;
    if (read_conntrack(attrs, end, row, F_A_SRC, F_B_SRC) != 3) return 0;
    // As the forward hook saw the first packet: after DNAT, to the reply's source.
    row[F_KEY] = flow_key(row, F_A_SRC, F_A_SPORT, F_B_SRC, F_B_SPORT);
    row[F_NAME] = name_key(row);
    return 1;
  }
  if (type == (SUBSYS_ULOG << 8)) {  // NFULNL_MSG_PACKET
    int payload = 0, prefix = 0;
    row[F_KIND] = KIND_PACKET;
    FOR_ATTR(attrs, end, t, v, n) {
      if (t == 9) payload = read_packet(v, n, row);  // NFULA_PAYLOAD
      else if (t == 10) {  // NFULA_PREFIX, NUL-terminated
        uint16_t len = n;
        while (len > 0 && v[len - 1] == 0) len--;
        row[F_PREFIX_AT] = (double)(v - base);
        row[F_PREFIX_LEN] = len;
        prefix = 1;
      } else if (t == 4 && n >= 4) row[F_IFINDEX] = be32(v);  // NFULA_IFINDEX_INDEV
    }
    if (payload) {
      row[F_KEY] = flow_key(row, F_A_SRC, F_A_SPORT, F_A_DST, F_A_DPORT);
      row[F_NAME] = name_key(row);
    }
    return payload && prefix;
  }
  return 0;
}

// Datagrams one recvmmsg takes, and the room each gets: a conntrack event is one message of a
// few hundred bytes, an nfnetlink_log datagram a batch of up to its buffer (4 KiB by default).
#define SLOTS 128
#define SLOT_BYTES 16384

// flowRead(fd, rx Buffer, out Float64Array) -> rows. Reads the queued datagrams into rx without
// waiting, SLOTS to a system call, while room is left in rx and for 1,024 rows in out, and writes
// a row per message into out from HEADER on. out[0]: 1 when the kernel dropped messages
// (ENOBUFS) or one did not fit its slot; out[1]: the numbers a row has (ROW), which the
// JavaScript side checks against its own. Prefixes stay in rx (a row holds their offset): read
// them before the next call.
napi_value flows_read(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], result;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd = -1;
  napi_get_value_int32(env, argv[0], &fd);
  uint8_t *rx;
  size_t rxLen;
  napi_get_buffer_info(env, argv[1], (void **)&rx, &rxLen);
  napi_typedarray_type kind;
  size_t outLen;
  void *outData;
  napi_get_typedarray_info(env, argv[2], &kind, &outLen, &outData, NULL, NULL);
  if (kind != napi_float64_array || outLen < HEADER + 1024 * ROW || rxLen < SLOT_BYTES) {
    napi_throw_type_error(env, NULL, "flowRead: out must be a Float64Array of at least 1,024 rows, rx 16 KiB or more");
    return NULL;
  }
  double *out = outData;
  size_t cap = (outLen - HEADER) / ROW, rows = 0, off = 0;
  struct mmsghdr msgs[SLOTS];
  struct iovec iov[SLOTS];
  out[0] = 0;
  out[1] = ROW;
  while (rxLen - off >= SLOT_BYTES && cap - rows >= 1024) {
    unsigned slots = (unsigned)((rxLen - off) / SLOT_BYTES);
    if (slots > SLOTS) slots = SLOTS;
    memset(msgs, 0, slots * sizeof *msgs);
    for (unsigned i = 0; i < slots; i++) {
      iov[i].iov_base = rx + off + (size_t)i * SLOT_BYTES;
      iov[i].iov_len = SLOT_BYTES;
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int got = recvmmsg(fd, msgs, slots, MSG_DONTWAIT, NULL);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {
        out[0] = 1;
        continue;
      }
      break;  // EAGAIN: drained; another error shows again on the next wake-up
    }
    if (got == 0) break;
    for (int i = 0; i < got; i++) {
      if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) out[0] = 1;
      const uint8_t *p = iov[i].iov_base, *end = p + msgs[i].msg_len;
      while (p + 16 <= end && rows < cap) {
        uint32_t len = *(const uint32_t *)p;
        if (len < 16 || p + len > end) break;
        if (read_message(rx, p, p + len, out + HEADER + rows * ROW)) rows++;
        p += (len + 3) & ~3u;
      }
    }
    off += (size_t)got * SLOT_BYTES;
    if ((unsigned)got < slots) break;  // the queue is empty
  }
  napi_create_uint32(env, (uint32_t)rows, &result);
  return result;
}
