// The kernel's numbers that flow logs' TypeScript needs from the two netfilter subsystems it
// reads: ctnetlink's multicast groups (linux/netfilter/nfnetlink_conntrack.h) and
// nfnetlink_log's configuration (linux/netfilter/nfnetlink_log.h). The messages themselves are
// read by the addon (felix/native/flows.c), which has the numbers for their attributes.

export const NFNL_SUBSYS_ULOG = 4;

/** Multicast groups of NETLINK_NETFILTER (enum nfnetlink_groups). */
export const NFNLGRP_CONNTRACK_NEW = 1;
export const NFNLGRP_CONNTRACK_DESTROY = 3;

/** conntrack status bit: the destination was NATed (a Service's DNAT). */
export const IPS_DST_NAT = 1 << 5;

export const NFULNL_MSG_CONFIG = 1;

export const NFULA_CFG_CMD = 1;
export const NFULA_CFG_MODE = 2;
export const NFULA_CFG_NLBUFSIZ = 3;
export const NFULA_CFG_TIMEOUT = 4;
export const NFULA_CFG_QTHRESH = 5;

export const NFULNL_CFG_CMD_BIND = 1;
export const NFULNL_COPY_PACKET = 2;
