// rtnetlink numbers from <linux/netlink.h>, <linux/rtnetlink.h>, <linux/neighbour.h>,
// <linux/if_link.h>. Only the ones felix uses.

export const NETLINK_ROUTE = 0;

export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;

export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP = 0x300;
export const NLM_F_REPLACE = 0x100;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
/** In an ack: the echoed request was capped (NETLINK_CAP_ACK). */
export const NLM_F_CAPPED = 0x100;
/** In an ack: extended-ack TLVs follow. */
export const NLM_F_ACK_TLVS = 0x200;
export const NLMSGERR_ATTR_MSG = 1;

export const RTM_NEWLINK = 16;
export const RTM_DELLINK = 17;
export const RTM_GETLINK = 18;
export const RTM_NEWADDR = 20;
export const RTM_DELADDR = 21;
export const RTM_GETADDR = 22;
export const RTM_NEWROUTE = 24;
export const RTM_DELROUTE = 25;
export const RTM_GETROUTE = 26;
export const RTM_NEWNEIGH = 28;
export const RTM_DELNEIGH = 29;
export const RTM_GETNEIGH = 30;

/** Multicast groups (RTNLGRP_*) a socket joins to hear of route changes. */
export const RTNLGRP_IPV4_ROUTE = 7;
export const RTNLGRP_IPV6_ROUTE = 11;

export const AF_UNSPEC = 0;
export const AF_INET = 2;
export const AF_BRIDGE = 7;
export const AF_INET6 = 10;

export const RTA_DST = 1;
export const RTA_OIF = 4;
export const RTA_GATEWAY = 5;
export const RTA_PRIORITY = 6;
export const RTA_MULTIPATH = 9;
export const RTA_TABLE = 15;

export const RTN_UNICAST = 1;
export const RTN_BLACKHOLE = 6;

export const RT_SCOPE_UNIVERSE = 0;
export const RT_SCOPE_LINK = 253;
export const RT_SCOPE_NOWHERE = 255;

export const RTNH_F_ONLINK = 4;

export const NDA_DST = 1;
export const NDA_LLADDR = 2;
export const NUD_PERMANENT = 0x80;
export const NTF_SELF = 0x02;

export const IFF_UP = 0x1;
export const IFLA_ADDRESS = 1;
export const IFLA_IFNAME = 3;
export const IFLA_MTU = 4;
export const IFLA_LINKINFO = 18;
export const IFLA_INFO_KIND = 1;
export const IFLA_INFO_DATA = 2;
export const IFLA_VXLAN_ID = 1;
export const IFLA_VXLAN_LINK = 3;
export const IFLA_VXLAN_LOCAL = 4;
export const IFLA_VXLAN_LEARNING = 7;
export const IFLA_VXLAN_PORT = 15;
export const IFLA_VXLAN_LOCAL6 = 17;

export const IFA_ADDRESS = 1;
export const IFA_LOCAL = 2;

export const NLA_F_NESTED = 0x8000;
