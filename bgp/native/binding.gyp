{
  "targets": [
    {
      "target_name": "tcp_md5",
      "sources": ["tcp_md5.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
