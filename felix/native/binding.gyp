{
  "targets": [
    {
      "target_name": "netlink",
      "sources": ["netlink.c", "flows.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
