// nfnetlink and nf_tables numbers from <linux/netfilter/nfnetlink.h> and
// <linux/netfilter/nf_tables.h>. Only the ones felix's nftables writer and reader use.

export const NETLINK_NETFILTER = 12;

/** nfgenmsg.res_id of a batch: the subsystem the batch is for. */
export const NFNL_SUBSYS_NFTABLES = 10;
export const NFNL_MSG_BATCH_BEGIN = 0x10;
export const NFNL_MSG_BATCH_END = 0x11;
/** In a batch begin: the generation the batch was planned against; the kernel refuses it (ERESTART) if another commit came first. */
export const NFNL_BATCH_GENID = 1;

export const NFPROTO_INET = 1;

/** An nf_tables message type: the subsystem in the high byte. */
export const nftMsg = (m: number): number => (NFNL_SUBSYS_NFTABLES << 8) | m;
export const NFT_MSG_NEWTABLE = 0;
export const NFT_MSG_GETTABLE = 1;
export const NFT_MSG_NEWCHAIN = 3;
export const NFT_MSG_GETCHAIN = 4;
export const NFT_MSG_DELCHAIN = 5;
export const NFT_MSG_NEWRULE = 6;
export const NFT_MSG_GETRULE = 7;
export const NFT_MSG_DELRULE = 8;
export const NFT_MSG_NEWSET = 9;
export const NFT_MSG_GETSET = 10;
export const NFT_MSG_DELSET = 11;
export const NFT_MSG_NEWSETELEM = 12;
export const NFT_MSG_GETSETELEM = 13;
export const NFT_MSG_DELSETELEM = 14;
export const NFT_MSG_NEWGEN = 15;
export const NFT_MSG_GETGEN = 16;

export const NFTA_TABLE_NAME = 1;

export const NFTA_CHAIN_TABLE = 1;
export const NFTA_CHAIN_NAME = 3;
export const NFTA_CHAIN_HOOK = 4;
export const NFTA_CHAIN_POLICY = 5;
export const NFTA_CHAIN_TYPE = 7;
export const NFTA_HOOK_HOOKNUM = 1;
export const NFTA_HOOK_PRIORITY = 2;

export const NFTA_RULE_TABLE = 1;
export const NFTA_RULE_CHAIN = 2;
export const NFTA_RULE_HANDLE = 3;
export const NFTA_RULE_EXPRESSIONS = 4;
export const NFTA_RULE_USERDATA = 7;
/** In a rule's userdata (libnftnl's TLVs): the comment, NUL-terminated. */
export const NFTNL_UDATA_RULE_COMMENT = 0;

export const NFTA_LIST_ELEM = 1;
export const NFTA_EXPR_NAME = 1;
export const NFTA_EXPR_DATA = 2;
export const NFTA_IMMEDIATE_DATA = 2;
export const NFTA_LOOKUP_SET = 1;
export const NFTA_DYNSET_SET_NAME = 1;
export const NFTA_DYNSET_SET_ID = 2;
export const NFTA_DYNSET_OP = 3;
export const NFTA_DYNSET_SREG_KEY = 4;
export const NFT_DYNSET_OP_UPDATE = 1;
export const NFTA_COUNTER_BYTES = 1;
export const NFTA_COUNTER_PACKETS = 2;

export const NFTA_SET_TABLE = 1;
export const NFTA_SET_NAME = 2;
export const NFTA_SET_FLAGS = 3;
export const NFTA_SET_KEY_TYPE = 4;
export const NFTA_SET_KEY_LEN = 5;
export const NFTA_SET_DATA_TYPE = 6;
export const NFTA_SET_DATA_LEN = 7;
export const NFTA_SET_ID = 10;
export const NFTA_SET_DESC = 9;
export const NFTA_SET_DESC_SIZE = 1;
export const NFTA_SET_TIMEOUT = 11;
export const NFTA_SET_USERDATA = 13;
/** In a set's userdata (libnftnl's TLVs): the key's byte order, which nft reads to print it. */
export const NFTNL_UDATA_SET_KEYBYTEORDER = 0;
// libnftnl's set userdata, which nft reads back to print a set as it was written.
export const NFTNL_UDATA_SET_DATABYTEORDER = 1;
export const NFTNL_UDATA_SET_MERGE_ELEMENTS = 2;
export const NFTNL_UDATA_SET_KEY_TYPEOF = 3;
export const NFTNL_UDATA_SET_DATA_TYPEOF = 4;
export const NFTNL_UDATA_SET_DATA_INTERVAL = 6;

export const NFT_SET_ANONYMOUS = 0x1;
export const NFT_SET_CONSTANT = 0x2;
export const NFT_SET_INTERVAL = 0x4;
export const NFT_SET_MAP = 0x8;
export const NFT_SET_TIMEOUT = 0x10;
export const NFT_SET_EVAL = 0x20;

export const NFTA_SET_ELEM_LIST_TABLE = 1;
export const NFTA_SET_ELEM_LIST_SET = 2;
export const NFTA_SET_ELEM_LIST_ELEMENTS = 3;
export const NFTA_SET_ELEM_LIST_SET_ID = 4;
export const NFTA_SET_ELEM_KEY = 1;
export const NFTA_SET_ELEM_DATA = 2;
export const NFTA_SET_ELEM_FLAGS = 3;
export const NFTA_SET_ELEM_USERDATA = 6;
/** In an element's userdata: NFTNL_SET_ELEM_F_INTERVAL_OPEN, an interval running to the last value (it has no end element). */
export const NFTNL_UDATA_SET_ELEM_FLAGS = 1;
export const NFTNL_SET_ELEM_F_INTERVAL_OPEN = 1;
/** An interval set's element that closes the interval the element before it opened (the key is one past its last address). */
export const NFT_SET_ELEM_INTERVAL_END = 0x1;

export const NFTA_DATA_VALUE = 1;
export const NFTA_DATA_VERDICT = 2;
export const NFTA_VERDICT_CODE = 1;
export const NFTA_VERDICT_CHAIN = 2;
/** A set's data type when its data are verdicts. */
export const NFT_DATA_VERDICT = 0xffffff00;

export const NF_DROP = 0;
export const NF_ACCEPT = 1;
export const NFT_CONTINUE = -1;
export const NFT_JUMP = -3;
export const NFT_GOTO = -4;
export const NFT_RETURN = -5;

export const NFTA_GEN_ID = 1;

export const NF_INET_PRE_ROUTING = 0;
export const NF_INET_LOCAL_IN = 1;
export const NF_INET_FORWARD = 2;
export const NF_INET_LOCAL_OUT = 3;
export const NF_INET_POST_ROUTING = 4;

/** A dump reply whose generation changed while it was read. */
export const NLM_F_DUMP_INTR = 0x10;

// Rules: each expression is a name and its attributes.
export const NLM_F_APPEND = 0x800;
export const NFT_REG_VERDICT = 0;
export const NFT_REG_1 = 1;
export const NFT_REG_2 = 2;

export const NFTA_META_DREG = 1;
export const NFTA_META_KEY = 2;
export const NFT_META_NFPROTO = 15;
export const NFT_META_L4PROTO = 16;

export const NFTA_CMP_SREG = 1;
export const NFTA_CMP_OP = 2;
export const NFTA_CMP_DATA = 3;
export const NFT_CMP_EQ = 0;
export const NFT_CMP_NEQ = 1;
export const NFT_CMP_LTE = 3;
export const NFT_CMP_GTE = 5;
export const NFTA_RANGE_SREG = 1;
export const NFTA_RANGE_OP = 2;
export const NFTA_RANGE_FROM_DATA = 3;
export const NFTA_RANGE_TO_DATA = 4;
export const NFT_RANGE_NEQ = 1;
export const NFTA_LOG_GROUP = 1;
export const NFTA_LOG_PREFIX = 2;

export const NFTA_PAYLOAD_DREG = 1;
export const NFTA_PAYLOAD_BASE = 2;
export const NFTA_PAYLOAD_OFFSET = 3;
export const NFTA_PAYLOAD_LEN = 4;
export const NFT_PAYLOAD_NETWORK_HEADER = 1;

export const NFTA_LOOKUP_SREG = 2;
export const NFTA_LOOKUP_FLAGS = 5;
export const NFTA_LOOKUP_SET_ID = 4;
export const NFT_LOOKUP_F_INV = 1;

export const NFTA_IMMEDIATE_DREG = 1;

export const NFTA_NG_DREG = 1;
export const NFTA_NG_MODULUS = 2;
export const NFTA_NG_TYPE = 3;
export const NFT_NG_RANDOM = 1;

export const NFTA_NAT_TYPE = 1;
export const NFTA_NAT_FAMILY = 2;
export const NFTA_NAT_REG_ADDR_MIN = 3;
export const NFTA_NAT_REG_PROTO_MIN = 5;
export const NFTA_NAT_FLAGS = 7;
export const NFT_NAT_DNAT = 1;
export const NF_NAT_RANGE_PROTO_SPECIFIED = 0x2;

export const NFPROTO_IPV4 = 2;
export const NFPROTO_IPV6 = 10;

export const NFT_META_MARK = 3;
export const NFT_META_IIFNAME = 6;
export const NFT_META_OIFNAME = 7;
export const NFTA_META_SREG = 3;
export const NFTA_LOOKUP_DREG = 3;
export const NFT_PAYLOAD_TRANSPORT_HEADER = 2;

export const NFTA_CT_DREG = 1;
export const NFTA_CT_KEY = 2;
export const NFT_CT_STATE = 0;
export const NFTA_CT_SREG = 4;
/** The connection's mark (ct mark), 32 bits in host byte order. */
export const NFT_CT_MARK = 3;

export const NFTA_BITWISE_SREG = 1;
export const NFTA_BITWISE_DREG = 2;
export const NFTA_BITWISE_LEN = 3;
export const NFTA_BITWISE_MASK = 4;
export const NFTA_BITWISE_XOR = 5;

export const NFTA_FIB_DREG = 1;
export const NFTA_FIB_RESULT = 2;
export const NFTA_FIB_FLAGS = 3;
export const NFT_FIB_RESULT_OIF = 1;
export const NFT_FIB_RESULT_ADDRTYPE = 3;
export const NFTA_FIB_F_SADDR = 0x1;
export const NFTA_FIB_F_IIF = 0x8;
export const NFTA_FIB_F_PRESENT = 0x20;
/** A route type (RTN_LOCAL), as `fib … type local` compares it. */
export const RTN_LOCAL = 2;

/** The first 32-bit register; a concatenation's later components load into these. */
export const NFT_REG32_00 = 8;
export const NFT_CT_STATUS = 2;
/** ct status bit: the connection's destination was NATed (IPS_DST_NAT). */
export const IPS_DST_NAT = 0x20;
export const NFTA_FIB_F_DADDR = 0x2;
export const NFTA_MASQ_FLAGS = 1;
export const NF_NAT_RANGE_PROTO_RANDOM_FULLY = 0x10;
export const NFTA_REJECT_TYPE = 1;
export const NFTA_REJECT_ICMP_CODE = 2;
/** `reject` in an inet table: ICMP or ICMPv6 port unreachable, by family. */
export const NFT_REJECT_ICMPX_UNREACH = 2;
export const NFT_REJECT_ICMPX_PORT_UNREACH = 1;

/** The limit expression (a token bucket), as flow log rules use it. */
export const NFTA_LIMIT_RATE = 1;
export const NFTA_LIMIT_UNIT = 2;
export const NFTA_LIMIT_BURST = 3;
export const NFTA_LIMIT_TYPE = 4;
export const NFTA_LIMIT_FLAGS = 5;
export const NFT_LIMIT_PKTS = 0;
