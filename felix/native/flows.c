// Flow logs' reader: drains a NETLINK_NETFILTER socket that carries conntrack events or
// nfnetlink_log packets and writes each message as one fixed row of numbers into a
// Float64Array, so JavaScript handles a batch of rows instead of walking attributes and
// formatting addresses per message. The layout is felix/flows/batch.ts's; keep them together.
#define _GNU_SOURCE
#include <node_api.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/netlink.h>
#include <linux/filter.h>

#define ROW 38
#define HEADER 8

// Row fields (felix/flows/batch.ts).
enum {
  F_KIND, F_PROTO, F_ID, F_STATUS, F_MARK, F_PACKETS, F_BYTES, F_FAMILY,
  F_A_SRC, F_A_DST = F_A_SRC + 4, F_A_SPORT = F_A_DST + 4, F_A_DPORT,
  F_B_SRC, F_B_DST = F_B_SRC + 4, F_B_SPORT = F_B_DST + 4, F_B_DPORT,
  F_PREFIX_AT, F_PREFIX_LEN, F_KEY, F_IFINDEX, F_NAME, F_START,
  F_COUNT, F_DECIDED, F_DECISION, F_LAST,
};
enum { KIND_NEW = 1, KIND_DESTROY = 2, KIND_PACKET = 3, KIND_STARTS = 4, KIND_ENDS = 5, KIND_DENIALS = 6 };
// Header: out[0] lost, out[1] ROW, out[2] flows the fold still holds, out[3] the fold's size in
// doubles, out[4] conntrack events read, out[5] logged packets read, out[6] 1 when the read
// stopped with its buffers full (the queue may hold more), out[7] HEADER.
enum { H_LOST, H_ROW, H_HELD, H_FOLD_SIZE, H_EVENTS, H_PACKETS, H_MORE, H_HEADER };

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

// The fold: between two reads JavaScript would take, flows whose decision is known here are
// added into one aggregate per (what names the flow, its rule, start/end/denial), so that
// JavaScript pays per distinct aggregate, not per flow. Its tables live in a Float64Array the
// caller owns (all zeros is empty), each bounded: the aggregates (flushed when HOLD_MS have
// passed since the first, or half full), logged Allows waiting for their NEW and NEWs waiting
// for their Allow (by the flow's key, PENDING_MS at most, the oldest of a bucket evicted), and
// the decision of each connection started by a join, for its DESTROY (LIVE_BUCKETS by id, the
// oldest of a bucket forgotten). What it cannot take (a staged policy's log, a full table)
// goes on as a row, to felix/flows/correlate.ts.

enum { CFG_FLAGS, CFG_NUMBER_BITS, CFG_STAGED_BIT, CFG_SHIFT, CFG_PENDING_MS, CFG_HOLD_MS, CFG_N = 16 };
// CFG_FLAGS: JOIN: join Allows' logged packets to NEWs (no staged policy's log can come);
// MARK: a NEW's and DESTROY's mark bits name their Allow; PORT_*: keep the client's port apart
// (per-flow records); JS_PENDING, JS_LIVE: the correlator holds logged packets, or connections,
// of its own (a row they may belong to goes to it).
enum { FOLD_JOIN = 1, FOLD_MARK = 2, FOLD_PORT_ALLOW = 4, FOLD_PORT_DENY = 8, FOLD_JS_PENDING = 16, FOLD_JS_LIVE = 32 };
enum { DECIDED_NONE = 0, DECIDED_PREFIX = 1, DECIDED_MARK = 2 };
enum { CODE_OTHER, CODE_A, CODE_D, CODE_DN };

#define AGG_SLOTS 2048
#define AGG_MAX 1024
#define PREFIXES 1024
#define PREFIX_BYTES 128
#define WAYS 4
#define PENDING_BUCKETS 1024
#define WAITING_BUCKETS 1024
#define LIVE_BUCKETS 16384

// A flow as the forward hook saw it: protocol, source, its port, destination (after DNAT), port.
typedef struct {
  uint32_t w[11];
} tuple_t;

typedef struct {
  uint32_t used, len, code, pad;
  char text[PREFIX_BYTES];
} prefix_t;

typedef struct {
  uint32_t used, decided, decision, pad;
  double count, packets, bytes, start, last;
  double row[ROW];
} agg_t;

typedef struct {
  uint64_t key;
  double at;
  tuple_t t;
  uint32_t used, prefix;
} pending_t;

typedef struct {
  uint64_t key;
  double at, packets, bytes, start;
  uint32_t used, ended;
  tuple_t t;
  double row[ROW];
} waiting_t;

typedef struct {
  uint32_t id, used, decided, decision;
  double seq;
} live_t;

typedef struct {
  double cfg[CFG_N];
  double held_since, seq;
  // When the last logged Allow was kept, and the oldest NEW began to wait: a NEW looks for a
  // waiting Allow, and a read for expired waits, only when there may be one (each look a cache
  // miss in a table of megabytes, per event).
  double pending_last, waiting_oldest;
  uint32_t live_used, pad2;
  uint32_t agg_used, waiting, prefixes, prefix_gen, prefix_full, pad;
  uint32_t agg_list[AGG_MAX];
  prefix_t prefix[PREFIXES];
  agg_t agg[AGG_SLOTS];
  pending_t pending[PENDING_BUCKETS * WAYS];
  waiting_t wait[WAITING_BUCKETS * WAYS];
  live_t live[LIVE_BUCKETS * WAYS];
} fold_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)(ts.tv_nsec / 1000000);
}

static tuple_t seen_tuple(const double *row) {
  tuple_t t;
  int packet = row[F_KIND] == KIND_PACKET;
  int dst = packet ? F_A_DST : F_B_SRC, dport = packet ? F_A_DPORT : F_B_SPORT;
  t.w[0] = (uint32_t)row[F_PROTO];
  for (int i = 0; i < 4; i++) {
    t.w[1 + i] = (uint32_t)row[F_A_SRC + i];
    t.w[6 + i] = (uint32_t)row[dst + i];
  }
  t.w[5] = (uint32_t)row[F_A_SPORT];
  t.w[10] = (uint32_t)row[dport];
  return t;
}

static int same_tuple(const tuple_t *a, const tuple_t *b) { return memcmp(a, b, sizeof *a) == 0; }

// The prefix's number (its place in the fold's table and the table's generation; its code
// set), or -1 when it is none of felix's, or the table is full: the next read empties it for a
// new generation (a decision kept under an older one is told undecided), as rules come and go.
static int64_t intern_prefix(fold_t *f, const uint8_t *text, unsigned len, int *code) {
  if (len < 5 || len >= PREFIX_BYTES || memcmp(text, "pr|", 3) != 0) return -1;
  if (text[3] == 'A' && text[4] == '|') *code = CODE_A;
  else if (text[3] == 'D' && text[4] == '|') *code = CODE_D;
  else if (len > 5 && text[3] == 'D' && text[4] == 'N' && text[5] == '|') *code = CODE_DN;
  else return -1;
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned i = 0; i < len; i++) h = (h ^ text[i]) * 0x100000001b3ull;
  for (unsigned probe = 0, at = (unsigned)(h % PREFIXES); probe < PREFIXES; probe++, at = (at + 1) % PREFIXES) {
    prefix_t *p = &f->prefix[at];
    if (!p->used) {
      if (f->prefixes >= PREFIXES / 2) {
        f->prefix_full = 1;
        return -1;
      }
      p->used = 1;
      p->len = len;
      p->code = (uint32_t)*code;
      memcpy(p->text, text, len);
      f->prefixes++;
      return (int64_t)f->prefix_gen * PREFIXES + at;
    }
    if (p->len == len && memcmp(p->text, text, len) == 0) return (int64_t)f->prefix_gen * PREFIXES + at;
  }
  return -1;
}

// Adds flows to the aggregate of their kind, naming and decision; 0 when the table is full.
static int fold_add(fold_t *f, int kind, const double *row, uint32_t decided, uint32_t decision, double count, double packets,
                    double bytes, double start, double at) {
  int keep_port = ((uint32_t)f->cfg[CFG_FLAGS] & (kind == KIND_DENIALS ? FOLD_PORT_DENY : FOLD_PORT_ALLOW)) != 0;
  uint64_t h = (uint64_t)row[F_NAME] ^ ((uint64_t)kind << 52) ^ ((uint64_t)decided << 55) ^ ((uint64_t)decision * 0x9e3779b97f4a7c15ull);
  if (keep_port) h ^= (uint64_t)row[F_A_SPORT] * 0xff51afd7ed558ccdull;
  static const int fields[] = {F_PROTO, F_FAMILY, F_A_SRC, F_A_SRC + 1, F_A_SRC + 2, F_A_SRC + 3, F_A_DST, F_A_DST + 1,
                               F_A_DST + 2, F_A_DST + 3, F_A_DPORT, F_B_SRC, F_B_SRC + 1, F_B_SRC + 2, F_B_SRC + 3, F_B_SPORT};
  for (unsigned probe = 0, s = (unsigned)(h % AGG_SLOTS); probe < AGG_SLOTS; probe++, s = (s + 1) % AGG_SLOTS) {
    agg_t *a = &f->agg[s];
    if (a->used) {
      if (a->row[F_KIND] != kind || a->decided != decided || a->decision != decision) continue;
      if (keep_port && a->row[F_A_SPORT] != row[F_A_SPORT]) continue;
      int same = 1;
      for (unsigned i = 0; i < sizeof fields / sizeof *fields && same; i++) same = a->row[fields[i]] == row[fields[i]];
      if (!same) continue;
    } else {
      if (f->agg_used >= AGG_MAX) return 0;
      a->used = 1;
      a->decided = decided;
      a->decision = decision;
      a->count = a->packets = a->bytes = a->start = 0;
      memcpy(a->row, row, sizeof a->row);
      a->row[F_KIND] = kind;
      f->agg_list[f->agg_used++] = s;
      if (f->held_since == 0) f->held_since = at;
    }
    a->count += count;
    a->packets += packets;
    a->bytes += bytes;
    if (start > 0 && (a->start == 0 || start < a->start)) a->start = start;
    a->last = at;
    return 1;
  }
  return 0;
}

static live_t *live_slot(fold_t *f, uint32_t id, int take) {
  live_t *b = &f->live[((id * 2654435761u) % LIVE_BUCKETS) * WAYS], *oldest = b;
  for (int i = 0; i < WAYS; i++) {
    if (b[i].used && b[i].id == id) return &b[i];
    if (take && (!b[i].used || (oldest->used && b[i].seq < oldest->seq))) oldest = &b[i];
  }
  return take ? oldest : NULL;
}

static void live_put(fold_t *f, uint32_t id, uint32_t decided, uint32_t decision) {
  live_t *l = live_slot(f, id, 1);
  if (!l->used) f->live_used++;
  l->id = id;
  l->used = 1;
  l->decided = decided;
  l->decision = decision;
  l->seq = ++f->seq;
}

// A NEW's start, decided (or not) when its wait ends: kept for its DESTROY, and told.
static int tell_start(fold_t *f, waiting_t *w, uint32_t decided, uint32_t decision, double at) {
  if (f->agg_used >= AGG_MAX - 1) return 0;
  fold_add(f, KIND_STARTS, w->row, decided, decision, 1, 0, 0, w->at, at);
  if (w->ended) fold_add(f, KIND_ENDS, w->row, decided, decision, 1, w->packets, w->bytes, w->start, at);
  else live_put(f, (uint32_t)w->row[F_ID], decided, decision);
  w->used = 0;
  f->waiting--;
  return 1;
}

static waiting_t *waiting_find(fold_t *f, uint64_t key, const tuple_t *t) {
  waiting_t *b = &f->wait[(key % WAITING_BUCKETS) * WAYS];
  for (int i = 0; i < WAYS; i++)
    if (b[i].used && b[i].key == key && same_tuple(&b[i].t, t)) return &b[i];
  return NULL;
}

static pending_t *pending_find(fold_t *f, uint64_t key, const tuple_t *t, double at) {
  if (at - f->pending_last > f->cfg[CFG_PENDING_MS]) return NULL;
  pending_t *b = &f->pending[(key % PENDING_BUCKETS) * WAYS];
  for (int i = 0; i < WAYS; i++)
    if (b[i].used && b[i].key == key && at - b[i].at <= f->cfg[CFG_PENDING_MS] && b[i].prefix / PREFIXES == f->prefix_gen &&
        same_tuple(&b[i].t, t))
      return &b[i];
  return NULL;
}

// Tells the NEWs whose Allow did not come in time (none decided them, or its log was limited);
// all of them when `all`.
static void expire_waiting(fold_t *f, double at, int all) {
  if (f->waiting == 0 || (!all && at - f->waiting_oldest < f->cfg[CFG_PENDING_MS])) return;
  double oldest = 0;
  for (unsigned i = 0; i < WAITING_BUCKETS * WAYS; i++) {
    waiting_t *w = &f->wait[i];
    if (!w->used) continue;
    if ((all || at - w->at >= f->cfg[CFG_PENDING_MS]) && tell_start(f, w, DECIDED_NONE, 0, at)) continue;
    if (oldest == 0 || w->at < oldest) oldest = w->at;
  }
  f->waiting_oldest = oldest;
}

// Takes a row into the fold; 0 when it goes on as a row.
static int fold_row(fold_t *f, const double *row, const uint8_t *rx, double at) {
  uint32_t flags = (uint32_t)f->cfg[CFG_FLAGS];
  int kind = (int)row[F_KIND];
  if (!(flags & (FOLD_JOIN | FOLD_MARK)) || f->agg_used >= AGG_MAX - 2) return 0;
  uint64_t key = (uint64_t)row[F_KEY];
  uint32_t mark = (uint32_t)row[F_MARK], number = 0, staged = 0;
  if (flags & FOLD_MARK) {
    number = (mark & (uint32_t)f->cfg[CFG_NUMBER_BITS]) >> (uint32_t)f->cfg[CFG_SHIFT];
    staged = mark & (uint32_t)f->cfg[CFG_STAGED_BIT];
  }
  if (kind == KIND_NEW) {
    tuple_t t = seen_tuple(row);
    if (number && !staged && ((flags & FOLD_JOIN) || !(flags & FOLD_JS_PENDING))) {
      pending_t *p = (flags & FOLD_JOIN) ? pending_find(f, key, &t, at) : NULL;
      if (p) p->used = 0;
      return fold_add(f, KIND_STARTS, row, DECIDED_MARK, number, 1, 0, 0, at, at);
    }
    if (!(flags & FOLD_JOIN) || staged) return 0;
    pending_t *p = pending_find(f, key, &t, at);
    if (p) {
      p->used = 0;
      live_put(f, (uint32_t)row[F_ID], DECIDED_PREFIX, p->prefix);
      return fold_add(f, KIND_STARTS, row, DECIDED_PREFIX, p->prefix, 1, 0, 0, at, at);
    }
    waiting_t *b = &f->wait[(key % WAITING_BUCKETS) * WAYS], *w = b;
    for (int i = 1; i < WAYS && w->used; i++)
      if (!b[i].used || b[i].at < w->at) w = &b[i];
    // The bucket's oldest wait ends early, undecided, as the correlator's maxPending ends it.
    if (w->used && !tell_start(f, w, DECIDED_NONE, 0, at)) return 0;
    w->used = 1;
    w->ended = 0;
    w->key = key;
    w->at = at;
    if (f->waiting == 0 || at < f->waiting_oldest) f->waiting_oldest = at;
    w->t = t;
    memcpy(w->row, row, sizeof w->row);
    f->waiting++;
    return 1;
  }
  if (kind == KIND_DESTROY) {
    live_t *l = f->live_used ? live_slot(f, (uint32_t)row[F_ID], 0) : NULL;
    if (l) {
      l->used = 0;
      f->live_used--;
      uint32_t decided = l->decided == DECIDED_PREFIX && l->decision / PREFIXES != f->prefix_gen ? DECIDED_NONE : l->decided;
      return fold_add(f, KIND_ENDS, row, decided, decided ? l->decision : 0, 1, row[F_PACKETS], row[F_BYTES], row[F_START], at);
    }
    tuple_t t = seen_tuple(row);
    waiting_t *w = f->waiting ? waiting_find(f, key, &t) : NULL;
    if (w && w->row[F_ID] == row[F_ID]) {
      w->ended = 1;
      w->packets = row[F_PACKETS];
      w->bytes = row[F_BYTES];
      w->start = row[F_START] > 0 ? row[F_START] : w->at;
      return 1;
    }
    if (flags & FOLD_JS_LIVE) return 0;
    return fold_add(f, KIND_ENDS, row, number ? DECIDED_MARK : DECIDED_NONE, number, 1, row[F_PACKETS], row[F_BYTES], row[F_START], at);
  }
  if (kind == KIND_PACKET && (flags & FOLD_JOIN)) {
    int code = CODE_OTHER;
    int64_t prefix = intern_prefix(f, rx + (size_t)row[F_PREFIX_AT], (unsigned)row[F_PREFIX_LEN], &code);
    if (prefix < 0) return 0;
    tuple_t t = seen_tuple(row);
    if (code != CODE_A) {
      pending_t *p = pending_find(f, key, &t, at);
      if (p) p->used = 0;
      return fold_add(f, KIND_DENIALS, row, DECIDED_PREFIX, (uint32_t)prefix, 1, 1, row[F_BYTES], at, at);
    }
    waiting_t *w = f->waiting ? waiting_find(f, key, &t) : NULL;
    if (w) return tell_start(f, w, DECIDED_PREFIX, (uint32_t)prefix, at);
    pending_t *b = &f->pending[(key % PENDING_BUCKETS) * WAYS], *p = NULL;
    for (int i = 0; i < WAYS && !p; i++)
      if (b[i].used && b[i].key == key && same_tuple(&b[i].t, &t)) p = &b[i];
    // An Allow met later on the packet's way (the destination's ingress after the source's egress) decides.
    if (!p) {
      p = b;
      for (int i = 1; i < WAYS; i++)
        if (!b[i].used || (p->used && b[i].at < p->at)) p = &b[i];
    }
    p->used = 1;
    p->key = key;
    p->at = at;
    f->pending_last = at;
    p->t = t;
    p->prefix = (uint32_t)prefix;
    return 1;
  }
  return 0;
}

// Writes the aggregates as rows at out and empties the table; the rows written.
static size_t fold_flush(fold_t *f, double *out) {
  size_t n = f->agg_used;
  for (size_t i = 0; i < n; i++) {
    agg_t *a = &f->agg[f->agg_list[i]];
    double *row = out + i * ROW;
    memcpy(row, a->row, sizeof a->row);
    row[F_COUNT] = a->count;
    row[F_PACKETS] = a->packets;
    row[F_BYTES] = a->bytes;
    row[F_START] = a->start;
    row[F_LAST] = a->last;
    row[F_DECIDED] = a->decided;
    row[F_DECISION] = a->decision;
    if (a->decided == DECIDED_PREFIX) {
      prefix_t *p = &f->prefix[a->decision % PREFIXES];
      row[F_PREFIX_AT] = (double)((const uint8_t *)p->text - (const uint8_t *)f);
      row[F_PREFIX_LEN] = p->len;
    }
    a->used = 0;
  }
  f->agg_used = 0;
  f->held_since = 0;
  return n;
}

// Datagrams one recvmmsg takes, and the room each gets unless told: a conntrack event is one
// message of a few hundred bytes (the reader gives it 2 KiB), an nfnetlink_log datagram a batch
// of up to its buffer (the reader's NFULA_CFG_NLBUFSIZ; 4 KiB by default).
#define SLOTS 256
#define SLOT_BYTES 16384
#define SLOT_MIN 1024

// A classic BPF filter for the conntrack event socket: the kernel drops (before queueing, on
// the sender's CPU) an IPv4 event none of whose addresses that name a flow is in `nets`: the
// original tuple's source and destination, and the reply tuple's source (where a DNAT sent it).
// ctnetlink writes the original tuple first (its IP nest first, source then destination) and the
// reply tuple next: the offsets below are those. IPv6 events and other messages pass.
#define FILTER_NETS 16
#define FILTER_MAX (12 + 9 * FILTER_NETS + 2)

static int attach_filter(int fd, const uint32_t *nets, size_t n) {
  if (n == 0) {
    setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, NULL, 0);
    return 0;
  }
  if (n > FILTER_NETS) return EINVAL;
  struct sock_filter code[FILTER_MAX];
  unsigned k = 0;
  // Only an IPv4 ctnetlink message is filtered (the subsystem is the type's high byte, little-endian).
  code[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 5);
  code[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SUBSYS_CTNETLINK, 0, 0);  // jf: accept (patched)
  unsigned not_ct = k - 1;
  code[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 16);  // nfgenmsg's family
  code[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, 0);  // AF_INET; jf: accept (patched)
  unsigned not_v4 = k - 1;
  // The reply tuple starts after the original's attribute: its length (little-endian), aligned.
  code[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 21);
  code[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 8);
  code[k++] = (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TAX, 0);
  code[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 20);
  code[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_OR | BPF_X, 0);
  code[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 3);
  code[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xfffc);
  code[k++] = (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TAX, 0);
  // X: the reply tuple's offset from 20. Addresses: original source (32), destination (40), reply source (X + 32).
  unsigned checks = k;
  for (int a = 0; a < 3; a++)
    for (size_t i = 0; i < n; i++) {
      code[k++] = a < 2 ? (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, a == 0 ? 32 : 40)
                        : (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_IND, 32);
      code[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, nets[2 * i + 1]);
      code[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nets[2 * i] & nets[2 * i + 1], 0, 0);  // jt: accept
    }
  code[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
  unsigned accept = k;
  code[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffffffff);
  code[not_ct].jf = (uint8_t)(accept - not_ct - 1);
  code[not_v4].jf = (uint8_t)(accept - not_v4 - 1);
  for (unsigned j = checks; j < accept - 1; j++)
    if (BPF_CLASS(code[j].code) == BPF_JMP) code[j].jt = (uint8_t)(accept - j - 1);
  struct sock_fprog prog = {.len = (unsigned short)k, .filter = code};
  return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) < 0 ? errno : 0;
}

// flowFilter by flowRead: flowRead(fd, rx, out, undefined, undefined, nets Uint32Array) attaches
// the filter of `nets` ([address, mask] pairs, host order; none: no filter) to fd instead of
// reading, and returns 0 or an errno.
// flowRead(fd, rx Buffer, out Float64Array[, fold Float64Array[, slot bytes]]) -> rows (fd -1:
// no socket; -2: none, and all the fold holds is told). Reads the queued datagrams into rx
// without waiting, SLOTS to a system call, a slot each, while room is left in rx and for 1,024
// rows in out, and writes a row per message into out from HEADER on, or, given a fold
// (out[3] says its size), takes into it what it can (see above) and writes its aggregates as
// rows when they are due. The header: out[0] bit 1 when the kernel dropped messages
// (ENOBUFS), bit 2 when a datagram did not fit its slot; out[1] the numbers a row has (ROW), which the JavaScript side checks
// against its own; out[2] flows the fold holds (aggregates and waits: read again later with fd
// -1); out[4], out[5] the conntrack events and logged packets read; out[6] 1 when it stopped
// because rx or out was full rather than because the queue was empty (the caller reads again
// before it rests); out[7] HEADER. Prefixes stay in rx (a row holds their offset; an
// aggregate's, in the fold): read them before the next call.
napi_value flows_read(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6], result;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd = -1;
  napi_get_value_int32(env, argv[0], &fd);
  if (argc >= 6) {
    napi_typedarray_type nk;
    size_t nn = 0;
    void *nd = NULL;
    if (napi_get_typedarray_info(env, argv[5], &nk, &nn, &nd, NULL, NULL) != napi_ok || nk != napi_uint32_array || nn % 2) {
      napi_throw_type_error(env, NULL, "flowRead: nets must be a Uint32Array of address and mask pairs");
      return NULL;
    }
    napi_create_uint32(env, (uint32_t)attach_filter(fd, nd, nn / 2), &result);
    return result;
  }
  uint8_t *rx;
  size_t rxLen;
  napi_get_buffer_info(env, argv[1], (void **)&rx, &rxLen);
  napi_typedarray_type kind;
  size_t outLen;
  void *outData;
  napi_get_typedarray_info(env, argv[2], &kind, &outLen, &outData, NULL, NULL);
  uint32_t slot = SLOT_BYTES;
  if (argc >= 5) napi_get_value_uint32(env, argv[4], &slot);
  if (kind != napi_float64_array || outLen < HEADER + 1024 * ROW || slot < SLOT_MIN || rxLen < slot) {
    napi_throw_type_error(env, NULL, "flowRead: out must be a Float64Array of at least 1,024 rows, a slot 1 KiB or more, rx a slot or more");
    return NULL;
  }
  fold_t *fold = NULL;
  napi_valuetype t = napi_undefined;
  if (argc >= 4) napi_typeof(env, argv[3], &t);
  if (t != napi_undefined) {
    size_t foldLen = 0;
    void *foldData = NULL;
    napi_get_typedarray_info(env, argv[3], &kind, &foldLen, &foldData, NULL, NULL);
    if (kind != napi_float64_array || foldLen * sizeof(double) < sizeof(fold_t)) {
      napi_throw_type_error(env, NULL, "flowRead: fold must be a Float64Array of out[3] numbers");
      return NULL;
    }
    fold = foldData;
  }
  double *out = outData;
  // off: where the next datagrams go; used: what this read has taken of rx's budget. A batch
  // whose rows need nothing of rx (no logged packet's prefix went on as a row) leaves off where
  // it was: the next batch reuses those bytes, still in the cache.
  size_t cap = (outLen - HEADER) / ROW, rows = 0, off = 0, used = 0;
  struct mmsghdr msgs[SLOTS];
  struct iovec iov[SLOTS];
  double at = fold ? now_ms() : 0;
  out[H_LOST] = 0;
  out[H_ROW] = ROW;
  out[H_FOLD_SIZE] = (double)((sizeof(fold_t) + sizeof(double) - 1) / sizeof(double));
  out[H_EVENTS] = out[H_PACKETS] = 0;
  out[H_HEADER] = HEADER;
  // Whether the loop ended for want of room, not because the kernel had no more (or an error).
  int more = fd >= 0;
  // fd -2: no socket, and all the fold holds is told now (the reader closes).
  int all = fd == -2;
  if (fold) {
    expire_waiting(fold, at, all);
    if (fold->prefix_full) {
      rows += fold_flush(fold, out + HEADER);
      memset(fold->prefix, 0, sizeof fold->prefix);
      fold->prefixes = fold->prefix_full = 0;
      fold->prefix_gen++;
    }
  }
  while (rxLen - used >= slot && cap - rows >= 1024) {
    // Half full: out first, while out has room for all of it.
    if (fold && fold->agg_used >= AGG_MAX / 2) {
      if (cap - rows < 1024 + fold->agg_used) break;
      rows += fold_flush(fold, out + HEADER + rows * ROW);
    }
    unsigned slots = (unsigned)((rxLen - used) / slot);  // off <= used: they fit from off too
    if (slots > SLOTS) slots = SLOTS;
    memset(msgs, 0, slots * sizeof *msgs);
    for (unsigned i = 0; i < slots; i++) {
      iov[i].iov_base = rx + off + (size_t)i * slot;
      iov[i].iov_len = slot;
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int got = recvmmsg(fd, msgs, slots, MSG_DONTWAIT, NULL);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {
        out[H_LOST] = (double)((uint32_t)out[H_LOST] | 1);
        continue;
      }
      more = 0;
      break;  // EAGAIN: drained; another error shows again on the next wake-up
    }
    if (got == 0) {
      more = 0;
      break;
    }
    int keep = 0;
    for (int i = 0; i < got; i++) {
      if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) out[H_LOST] = (double)((uint32_t)out[H_LOST] | 2);
      const uint8_t *p = iov[i].iov_base, *end = p + msgs[i].msg_len;
      while (p + 16 <= end && rows < cap) {
        uint32_t len = *(const uint32_t *)p;
        if (len < 16 || p + len > end) break;
        double *row = out + HEADER + rows * ROW;
        if (read_message(rx, p, p + len, row)) {
          out[row[F_KIND] == KIND_PACKET ? H_PACKETS : H_EVENTS]++;
          if (!fold || !fold_row(fold, row, rx, at)) {
            keep |= row[F_KIND] == KIND_PACKET;
            rows++;
          }
        }
        p += (len + 3) & ~3u;
      }
    }
    used += (size_t)got * slot;
    if (keep) off += (size_t)got * slot;
    if ((unsigned)got < slots) {  // the queue is empty
      more = 0;
      break;
    }
  }
  out[H_MORE] = more;
  if (fold && fold->agg_used > 0 && (all || at - fold->held_since >= fold->cfg[CFG_HOLD_MS]) && cap - rows >= fold->agg_used)
    rows += fold_flush(fold, out + HEADER + rows * ROW);
  out[H_HELD] = fold ? fold->agg_used + fold->waiting : 0;
  napi_create_uint32(env, (uint32_t)rows, &result);
  return result;
}
