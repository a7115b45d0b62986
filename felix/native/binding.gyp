{
  "targets": [
    {
      "target_name": "netlink",
      "sources": ["netlink.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
