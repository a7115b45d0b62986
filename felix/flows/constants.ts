// The kernel's numbers for the two netfilter subsystems flow logs read: ctnetlink (conntrack's
// events, linux/netfilter/nfnetlink_conntrack.h) and nfnetlink_log (packets a `log group` rule
// hands over, linux/netfilter/nfnetlink_log.h).

export const NFNL_SUBSYS_CTNETLINK = 1;
export const NFNL_SUBSYS_ULOG = 4;

/** Multicast groups of NETLINK_NETFILTER (enum nfnetlink_groups). */
export const NFNLGRP_CONNTRACK_NEW = 1;
export const NFNLGRP_CONNTRACK_DESTROY = 3;

export const IPCTNL_MSG_CT_NEW = 0;
export const IPCTNL_MSG_CT_DELETE = 2;

export const CTA_TUPLE_ORIG = 1;
export const CTA_TUPLE_REPLY = 2;
export const CTA_STATUS = 3;
export const CTA_MARK = 8;
export const CTA_COUNTERS_ORIG = 9;
export const CTA_COUNTERS_REPLY = 10;
export const CTA_ID = 12;
export const CTA_TIMESTAMP = 20;

export const CTA_TUPLE_IP = 1;
export const CTA_TUPLE_PROTO = 2;
export const CTA_IP_V4_SRC = 1;
export const CTA_IP_V4_DST = 2;
export const CTA_IP_V6_SRC = 3;
export const CTA_IP_V6_DST = 4;
export const CTA_PROTO_NUM = 1;
export const CTA_PROTO_SRC_PORT = 2;
export const CTA_PROTO_DST_PORT = 3;
export const CTA_PROTO_ICMP_TYPE = 5;
export const CTA_PROTO_ICMP_CODE = 6;
export const CTA_PROTO_ICMPV6_TYPE = 8;
export const CTA_PROTO_ICMPV6_CODE = 9;
export const CTA_COUNTERS_PACKETS = 1;
export const CTA_COUNTERS_BYTES = 2;
export const CTA_TIMESTAMP_START = 1;
export const CTA_TIMESTAMP_STOP = 2;

/** conntrack status bit: the destination was NATed (a Service's DNAT). */
export const IPS_DST_NAT = 1 << 5;

export const NFULNL_MSG_PACKET = 0;
export const NFULNL_MSG_CONFIG = 1;

export const NFULA_CFG_CMD = 1;
export const NFULA_CFG_MODE = 2;
export const NFULA_CFG_NLBUFSIZ = 3;
export const NFULA_CFG_TIMEOUT = 4;
export const NFULA_CFG_QTHRESH = 5;

export const NFULNL_CFG_CMD_BIND = 1;
export const NFULNL_CFG_CMD_UNBIND = 2;
export const NFULNL_COPY_PACKET = 2;

export const NFULA_PACKET_HDR = 1;
export const NFULA_TIMESTAMP = 3;
export const NFULA_IFINDEX_INDEV = 4;
export const NFULA_IFINDEX_OUTDEV = 5;
export const NFULA_PAYLOAD = 9;
export const NFULA_PREFIX = 10;

export const ETH_P_IP = 0x0800;
export const ETH_P_IPV6 = 0x86dd;
