{
  "targets": [
    {
      "target_name": "tcp_md5",
      "sources": ["tcp_md5.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    },
    {
      "target_name": "bfd_socket",
      "sources": ["bfd_socket.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
