/*
 * podroute-cni: the CNI plugin as a container runtime runs it, a small client of the node agent.
 * Starting Node for every call costs more than the call itself, so `podroute node run` does the
 * plugin's work in its own process (lib/agent/cni-server.ts) and this program only carries the
 * call there and the answer back.
 *
 * The socket: $PODROUTE_CNI_SOCKET, else /run/podroute/cni.sock. One connection, one call.
 *
 * Request (shim -> agent), then the shim shuts down its sending side:
 *   "PODROUTE-CNI 1\n"
 *   each environment entry whose name starts with CNI_ or PODROUTE_, or is NODENAME,
 *     as "NAME=value" followed by a NUL byte
 *   one more NUL byte (an empty entry) ending the environment
 *   the runtime's stdin (the network configuration), as is, up to end of file
 * Answer (agent -> shim), then the agent closes the connection:
 *   "PODROUTE-CNI 1 <exit code>\n"
 *   the plugin's stdout, as is, up to end of file
 *
 * No agent (no socket, a refused connect, or PODROUTE_CNI_SOCKET=off): the shim execs the Node
 * plugin, podroute-cni-node next to its own executable, else podroute's bin/podroute-cni.js
 * when it runs from the package's cni/shim folder, else podroute-cni-node on PATH; a node
 * without an agent works as before. So does a call with arguments (-h, --version).
 * Any other failure: a CNI error (code 11, try again later) on stdout and exit status 1.
 *
 * Whom it talks to: the call carries what the runtime asked for and the answer is trusted as the
 * pod's network, so before sending anything the shim checks that the socket is not a symlink and
 * is owned by root or by the user the shim runs as, and so is its folder, which no one else may
 * write in (unless sticky, as /tmp); after connecting, that the process listening is root's or
 * that user's (SO_PEERCRED, which no rename between the check and the connect can fool).
 * Anything else is refused with a CNI error (code 5, I/O failure) naming the path and the owner.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <pwd.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/run/podroute/cni.sock"
#define REQUEST_MAGIC "PODROUTE-CNI 1\n"
#define ANSWER_MAGIC "PODROUTE-CNI 1 "
/* Longer than the agent's own limit on a call (120 s), so its answer is the one seen. */
#define ANSWER_TIMEOUT_S 130
/* CNI's "I/O failure": the socket is there but is not one to trust; retrying will not change that. */
#define CODE_UNTRUSTED 5

extern char **environ;

/* Prints s as the inside of a JSON string (a path may hold quotes, backslashes, control bytes). */
static void json_text(const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
}

static void fail(const char *what, int err) {
  printf("{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"podroute-cni: ");
  json_text(what);
  printf(": %s\",\"details\":\"the node agent (podroute node run) could not be asked; try again later\"}\n",
         err ? strerror(err) : "no answer");
  fflush(stdout);
  exit(1);
}

/* "uid 65534 (nobody)", as ls -l would name the owner. */
static const char *owner_name(uid_t uid) {
  static char buf[128];
  struct passwd *pw = getpwuid(uid);
  if (pw && pw->pw_name) snprintf(buf, sizeof buf, "uid %u (%s)", (unsigned)uid, pw->pw_name);
  else snprintf(buf, sizeof buf, "uid %u", (unsigned)uid);
  return buf;
}

/* Refuses to send the call to `path`: `why`, and who owns it. */
static void untrusted(const char *path, const char *why, uid_t owner) {
  printf("{\"cniVersion\":\"1.0.0\",\"code\":%d,\"msg\":\"podroute-cni: ", CODE_UNTRUSTED);
  json_text(path);
  printf(" %s ", why);
  json_text(owner_name(owner));
  printf("\",\"details\":\"only root or uid %u may own the node agent's socket and its folder; "
         "the call was not sent\"}\n",
         (unsigned)geteuid());
  fflush(stdout);
  exit(1);
}

static int trusted(uid_t uid) { return uid == 0 || uid == geteuid(); }

/*
 * The socket and its folder, before anything is sent: not a symlink, and no one but root or this
 * user could have put the socket there or can rename it. A missing path is left to connect(),
 * which then runs the Node plugin as before.
 */
static void check_socket_path(const char *sock) {
  struct stat st;
  if (lstat(sock, &st) < 0) {
    if (errno == ENOENT) return;
    fail(sock, errno);
  }
  if (S_ISLNK(st.st_mode)) untrusted(sock, "is a symlink owned by", st.st_uid);
  if (!trusted(st.st_uid)) untrusted(sock, "is owned by", st.st_uid);
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", sock);
  const char *dir = dirname(copy);
  if (stat(dir, &st) < 0) fail(dir, errno);
  if (!trusted(st.st_uid)) untrusted(dir, "(the socket's folder) is owned by", st.st_uid);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    untrusted(dir, "(the socket's folder) may be written by group or others; it is owned by", st.st_uid);
}

/* The process listening, as the kernel recorded it when it bound: no rename can change it. */
static void check_peer(int fd, const char *sock) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) fail(sock, errno);
  if (!trusted(cred.uid)) untrusted(sock, "is answered by a process of", cred.uid);
}

/* Runs the Node plugin in this process's place, stdin untouched. */
static void exec_node_plugin(char **argv) {
  char self[PATH_MAX], path[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      snprintf(path, sizeof path, "%s/podroute-cni-node", self);
      execv(path, argv);
      snprintf(path, sizeof path, "%s/../../bin/podroute-cni.js", self);
      execv(path, argv);
    }
  }
  execvp("podroute-cni-node", argv);
  fail("no node agent socket, and podroute-cni-node is neither beside this program nor on PATH", errno);
}

static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

static int wanted(const char *entry) {
  return strncmp(entry, "CNI_", 4) == 0 || strncmp(entry, "PODROUTE_", 9) == 0 || strncmp(entry, "NODENAME=", 9) == 0;
}

/* Sends the request; returns 0, or -1 with errno when the agent stopped reading. */
static int send_request(int fd) {
  if (write_all(fd, REQUEST_MAGIC, strlen(REQUEST_MAGIC)) < 0) return -1;
  for (char **e = environ; *e; e++)
    if (wanted(*e) && write_all(fd, *e, strlen(*e) + 1) < 0) return -1;
  if (write_all(fd, "", 1) < 0) return -1;
  char buf[65536];
  for (;;) {
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("reading stdin", errno);
    }
    if (write_all(fd, buf, (size_t)n) < 0) return -1;
  }
  return shutdown(fd, SHUT_WR);
}

int main(int argc, char **argv) {
  const char *sock = getenv("PODROUTE_CNI_SOCKET");
  if (!sock || !*sock) sock = DEFAULT_SOCKET;
  if (argc > 1 || strcmp(sock, "off") == 0) exec_node_plugin(argv);

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(sock) >= sizeof addr.sun_path) fail("PODROUTE_CNI_SOCKET is longer than a socket path may be", ENAMETOOLONG);
  strcpy(addr.sun_path, sock);
  check_socket_path(sock);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("socket", errno);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
    if (errno == ENOENT || errno == ECONNREFUSED) {
      close(fd);
      exec_node_plugin(argv);
    }
    fail(sock, errno);
  }
  check_peer(fd, sock);
  /* A write to an agent that went away is an error to handle, not a signal that kills the shim. */
  signal(SIGPIPE, SIG_IGN);
  struct timeval tv = {.tv_sec = ANSWER_TIMEOUT_S};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  /* An agent that refused the request early (too large) may already have answered: read on. */
  int sent = send_request(fd);
  int send_errno = errno;

  /* The whole answer first, so a connection lost halfway prints the error alone. */
  size_t cap = 65536, have = 0;
  char *buf = malloc(cap);
  if (!buf) fail("memory", errno);
  for (;;) {
    if (have == cap - 1) {
      if (cap >= (64u << 20)) fail("the answer is over 64 MiB", 0);
      cap *= 2;
      if (!(buf = realloc(buf, cap))) fail("memory", errno);
    }
    ssize_t n = read(fd, buf + have, cap - 1 - have);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("reading the answer", errno);
    }
    have += (size_t)n;
  }
  buf[have] = '\0';
  char *nl = memchr(buf, '\n', have);
  if (!nl) fail(sent < 0 ? "sending the call" : "reading the answer", sent < 0 ? send_errno : 0);
  if (strncmp(buf, ANSWER_MAGIC, strlen(ANSWER_MAGIC)) != 0) fail("the answer is not in the shim framing", 0);
  char *end;
  long code = strtol(buf + strlen(ANSWER_MAGIC), &end, 10);
  if (end != nl || code < 0 || code > 255) fail("the answer's exit code is not a number from 0 to 255", 0);
  if (write_all(STDOUT_FILENO, nl + 1, have - (size_t)(nl + 1 - buf)) < 0) fail("writing stdout", errno);
  return (int)code;
}
