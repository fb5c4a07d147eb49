/* SPDX-License-Identifier: MIT */
/*
 * kiln agent protocol, version 1: kilnd (host) <-> kiln-agent (guest PID 1).
 *
 * Transport: virtio-vsock stream connections. kilnd reaches the agent at
 * guest port KILN_AGENT_PORT through the VM's vsock unix socket
 * (Firecracker's hybrid protocol: write "CONNECT 1024\n", read "OK <n>\n").
 * One connection carries one stream at a time; connections are cheap.
 *
 * Framing: every message is a kiln_frame header followed by `len` payload
 * bytes. All integers are little-endian. len <= KILN_FRAME_MAX: a peer that
 * receives a larger len, an unknown type, or a payload that does not parse
 * exactly closes the connection (after sending KILN_MSG_ERROR when it can).
 *
 * Every stream starts with KILN_MSG_HELLO from the host naming the stream
 * kind; the agent answers KILN_MSG_HELLO (its version) or KILN_MSG_ERROR.
 * With 64 streams open, the agent answers a new connection with ERROR EBUSY
 * at once, before reading its HELLO. Before its HELLO the agent sends
 * nothing else, and waits for it without a time limit: a host may open
 * connections ahead of need (kilnd keeps a few spare) and start streams on
 * them later. A host sends the frames of a request together (HELLO, START,
 * its input, STDIN_EOF) and the agent batches what it has to say: a
 * command that ends quickly gets STARTED, its output and EXIT in one write.
 *
 * After its last frame (EXIT, DONE, INFO or ERROR) the agent shuts down its
 * sending side, so the host reads EOF, and discards anything the host still
 * sends until the host closes (at most 2 s). The host closes after the last
 * frame; the host ending a stream early (close or ERROR) aborts it. A stream
 * whose HELLO carries KILN_FRAME_REUSE ends differently: see there.
 *
 * Strings inside payloads are a u32 length followed by that many bytes (no
 * NUL; a NUL inside is an error). Lists are a u32 count followed by that many
 * items. Sizes are bounded by the limits below; exceeding one is an error.
 *
 * Any change to a layout or meaning bumps KILN_AGENT_VERSION. Compatible
 * additions do not (snapshots keep the agent they were taken with): a flag
 * an older agent ignores (KILN_FRAME_KEEP), a message type it refuses with
 * ERROR EPROTO (KILN_MSG_ATTACH), a stream kind it refuses with ERROR
 * EINVAL "unknown stream kind" in answer to the HELLO (KILN_STREAM_PORT), or
 * a trailer of fields a host sends only when it needs them, which an older
 * agent refuses with ERROR EPROTO "trailing bytes" (the user trailer of
 * START and FILE_REQUEST).
 */
#ifndef KILN_AGENT_H
#define KILN_AGENT_H

#include <stdint.h>

#define KILN_AGENT_VERSION 1
#define KILN_AGENT_PORT    1024

#define KILN_FRAME_MAX   (1u << 20)  /* payload bytes per frame */
#define KILN_DATA_CHUNK  (64u << 10) /* data frames kiln writes are at most this */
#define KILN_MAX_ARGS    4096        /* argv and env entries */
#define KILN_MAX_STRING  65536       /* one argument, variable or path */
#define KILN_MAX_RLIMITS 16          /* START's rlimits trailer entries */

struct kiln_frame {
	uint32_t len;   /* payload bytes following */
	uint16_t type;  /* enum kiln_msg */
	uint16_t flags; /* 0, KILN_FRAME_KEEP on START, KILN_FRAME_REUSE on HELLO;
	                 * others reserved */
};

/* On START: the command outlives its stream. If the connection ends before
 * EXIT (the host closed it, or the vsock transport was reset by a snapshot
 * restore), the agent keeps the process running, its stdin open, and the
 * newest KILN_KEEP_OUTPUT / 2 to KILN_KEEP_OUTPUT bytes of its output (in
 * whole frames; older output is dropped, the process never blocks on it),
 * until a stream ATTACHes to it. A kept process that has exited is forgotten
 * KILN_KEEP_EXITED_MS after its exit if nobody attached. Agents from before
 * this flag ignore it (the process is killed with its stream). */
#define KILN_FRAME_KEEP     0x1
#define KILN_KEEP_OUTPUT    (256u << 10)
#define KILN_KEEP_EXITED_MS 600000

/* On the host's HELLO: keep the connection for another stream. An agent
 * that does so says KILN_HELLO_REUSE in its HELLO answer; then, when the
 * stream ends with its last frame (EXIT, DONE, INFO, or the STAT of a
 * stat operation; not ERROR, after which the connection ends as usual), the agent neither shuts down its
 * sending side nor closes: it drops whatever the host still sends for the
 * old stream (any frame but HELLO; ERROR still ends the connection) and
 * waits for the HELLO of the next stream, as on a new connection. A host
 * reuses the connection only after that last frame, and only if its own
 * frames of the old stream were all written. Agents from before the flag
 * ignore it and answer 0: their connections end as usual. */
#define KILN_FRAME_REUSE 0x2
#define KILN_HELLO_REUSE 0x1
/* In every HELLO answer of an agent that takes the user trailer (START,
 * FILE_REQUEST) and KILN_USER_GIVE. Agents without it (in snapshots and
 * templates taken with them) may still take the trailer, or, from before
 * users, refuse it with ERROR EPROTO: a host asks one with a trailer that
 * names root (kilnd: control/sandbox/users_probe.c). */
#define KILN_HELLO_USERS 0x2
/* In every HELLO answer of an agent that takes START's tag trailer and
 * serves KILN_STREAM_PROCS: a host that knows it can find, after a pause
 * or its own restart, the commands whose STARTED it never read. Agents
 * without it refuse the tag trailer with ERROR EPROTO "trailing bytes" and
 * the stream kind with ERROR EINVAL: a host sends neither to them. */
#define KILN_HELLO_PROCS 0x4
/* In every HELLO answer of an agent that takes CONNECT's peer trailer.
 * Agents without it refuse the trailer with ERROR EPROTO "trailing bytes":
 * a host sends it only to an agent that said this (kilnd knows from its
 * boot probe; the shim waits for the stream's HELLO answer the first
 * time). */
#define KILN_HELLO_PEER 0x8

enum kiln_stream {
	KILN_STREAM_INVALID = 0,
	KILN_STREAM_EXEC,  /* run a command, pipes for stdin/stdout/stderr */
	KILN_STREAM_PTY,   /* run a command on a pseudo-terminal */
	KILN_STREAM_FILE,  /* one file operation */
	KILN_STREAM_INFO,  /* agent version, uptime, memory */
	KILN_STREAM_PORT,  /* a TCP connection to a port of the guest's loopback */
	KILN_STREAM_PROCS, /* the exec and pty processes the agent runs (KILN_HELLO_PROCS) */
	KILN_STREAM_MAX,
};

enum kiln_msg {
	KILN_MSG_INVALID = 0,

	/* Both ways, first frame. Host: u32 version, u32 stream kind.
	 * Agent: u32 version, u32 flags (KILN_HELLO_REUSE, _USERS, _PROCS). */
	KILN_MSG_HELLO,
	/* Either way: u32 errno value, string message. Ends the stream. */
	KILN_MSG_ERROR,

	/* ---- exec and pty streams ---- */
	/* Host, once, after HELLO:
	 *   list of strings argv (at least one), list of strings env
	 *   ("NAME=value"), string cwd (empty: "/"), u32 uid (0 = root),
	 *   u32 timeout_ms (0 = none; the agent kills the process group with
	 *   SIGKILL when it expires), u16 cols, u16 rows (pty only; 0 = 80x24).
	 * cols and rows are present in exec streams too (ignored there).
	 * env entries must be NAME=value; they are added to the agent's base
	 * environment (PATH, HOME=/root, LANG=C.UTF-8, and for pty streams
	 * TERM=xterm-256color), replacing entries of the same name. argv[0]
	 * without a '/' is searched in the PATH of that result. uid != 0 runs
	 * the command with uid and gid = uid and no supplementary groups.
	 * The command runs in its own session / process group.
	 * Then, optionally, the user trailer: string user, u32 flags
	 * (KILN_USER_*). A non-empty user is an account of the guest's
	 * /etc/passwd (root exists even without one); it replaces uid: the
	 * command gets its uid, gid and groups (its /etc/group memberships),
	 * HOME, USER and LOGNAME (before the request's env), and, when cwd is
	 * empty, its home as the working directory ("/" if that fails). The
	 * working directory is entered as the user. An unknown user is ERROR
	 * ESRCH ("no user ..."), a name with other characters than letters,
	 * digits, '.', '_' and '-' (or longer than 32) ERROR EINVAL.
	 * Then, optionally (after a user trailer, which may name no user:
	 * empty string, flags 0), the rlimits trailer: u32 count (at most
	 * KILN_MAX_RLIMITS), then per limit u32 resource (Linux's RLIMIT_*
	 * number), u64 soft, u64 hard (~0: unlimited). The command's process
	 * sets them before it changes user; one the guest refuses is ERROR
	 * with its errno ("cannot set rlimit N ..."). Older agents ignore it
	 * (a compatible addition).
	 * Then, optionally (after an rlimits trailer, which may have count 0),
	 * the root trailer: string root, an absolute directory of the guest
	 * (empty: "/"). The command's process chroot(2)s into it after its
	 * rlimits and before it changes user; cwd and argv[0]'s PATH search
	 * are then inside it (a pod's container in a VM it shares with the
	 * others: shim/ctr_root.c). A pty stream's terminal node
	 * (/dev/pts/N) is linked into ROOT/dev/pts first (for ttyname()).
	 * ERROR with the errno of the chroot ("cannot change root to ...").
	 * A non-empty root ("/" too) also names the command's PID namespace
	 * in a kiln guest (include/kiln/pidns.h, initramfs/agent/pidns.c):
	 * the commands under one root share one, where the first is pid 1 and
	 * sees only them; STARTED's pid is still the agent's (global) one.
	 * Older agents ignore it.
	 * Then, optionally (after a root trailer, which may be empty), the tag
	 * trailer: u64 tag, chosen by the host (0: none). The agent keeps it
	 * with the process and reports it in KILN_MSG_PROC, so that a host
	 * that never read the STARTED (a pause, or its own restart, came
	 * between) can tell which of its commands started, and as what pid.
	 * Only agents that say KILN_HELLO_PROCS take it.
	 * Then, optionally (after a tag trailer, which may be 0), the pidns
	 * trailer: string root, a START root (absolute; empty: none) whose
	 * PID namespace the command joins instead of its own root's (a pod's
	 * app container that shares its sandbox's, Kubernetes'
	 * shareProcessNamespace: shim/pidshare.c). That namespace must be
	 * alive (its pid 1 running), else ERROR ESRCH; a kernel without
	 * namespaces (Linux) runs the command in the agent's. Older agents
	 * ignore it (the command gets its own root's namespace).
	 * Test hook: a START whose env has KILN_TEST_STARTED_DELAY_MS=N
	 * (1..10000) holds its STARTED N ms after the command has started (the
	 * command runs meanwhile), so that tests can pause a sandbox or
	 * restart kilnd inside that window. It delays nothing but that
	 * request's own answer. */
	KILN_MSG_START,
	/* Agent: u32 pid, once the command runs (or ERROR if it could not). */
	KILN_MSG_STARTED,
	/* Host: bytes for the command's stdin (or the terminal's input). */
	KILN_MSG_STDIN,
	/* Host: no more input; the agent closes the command's stdin (and drops
	 * STDIN frames after it). Pty: the agent sends the terminal's EOF
	 * character instead. */
	KILN_MSG_STDIN_EOF,
	/* Agent: bytes the command wrote (pty streams use STDOUT only). */
	KILN_MSG_STDOUT,
	KILN_MSG_STDERR,
	/* Host: u32 signal number (1..64, else ERROR EINVAL), sent to the
	 * command's process group. */
	KILN_MSG_SIGNAL,
	/* Host, pty only: u16 cols, u16 rows. */
	KILN_MSG_RESIZE,
	/* Agent, last frame: i32 exit code (-1 if killed), u32 signal (0 if it
	 * exited), u32 flags (KILN_EXIT_TIMEOUT). Output frames always come
	 * before EXIT; the agent closes the connection after it. If the host
	 * closes the connection first, the agent kills the process group.
	 * EXIT waits for the process to exit and for its output (pipes or
	 * terminal) to reach EOF: a background process that keeps stdout open
	 * delays EXIT until it ends (or the timeout kills the group). */
	KILN_MSG_EXIT,

	/* ---- file streams: one request, then replies ---- */
	/* Host: u32 op (enum kiln_file_op), string path, then per op:
	 *   READ:   nothing           -> STAT, DATA..., DONE
	 *           regular files only (else ERROR EISDIR / EINVAL); STAT's
	 *           size is taken at open, the DATA up to DONE is the content
	 *   WRITE:  u32 mode          -> (host sends DATA..., DONE) -> DONE
	 *           the agent writes to a temporary file in the same directory
	 *           and renames it over path on DONE: readers never see a
	 *           partial file; a broken stream leaves path untouched.
	 *           The file gets exactly mode (no umask); the directory must
	 *           exist.
	 *   LIST:   nothing           -> one ENTRY per directory entry, DONE
	 *   STAT:   nothing           -> STAT (of the link itself, like lstat)
	 *   MKDIR:  u32 mode          -> DONE (creates missing parents, like -p;
	 *           the last one gets exactly mode; an existing directory is
	 *           success)
	 *   REMOVE: u32 recursive     -> DONE (never follows symlinks)
	 *   RENAME: string new path   -> DONE
	 *   UNTAR:  u32 flags         -> (host sends DATA..., DONE) -> DONE
	 *           path is a directory, made like MKDIR (mode 0755) if
	 *           missing; the DATA is a tar stream (POSIX ustar, pax "x" and
	 *           GNU "L"/"K" long names) unpacked into it as it arrives:
	 *           files, directories, symlinks and hard links with their
	 *           modes, owners and (files) mtimes; device nodes and fifos
	 *           are left out. A name that is absolute, has a ".."
	 *           component or a parent that is not a directory is ERROR
	 *           EPERM / ENOTDIR, a malformed stream ERROR EPROTO (what was
	 *           unpacked before stays). With KILN_UNTAR_DEV, DONE also
	 *           links the guest's null, zero, full, random, urandom and tty
	 *           into path/dev (made if missing; the tree's own stay); with
	 *           KILN_UNTAR_PROC it mounts a procfs on path/proc (made if
	 *           missing; it must be empty).
	 *   REMOVE recursive unmounts what is mounted on a directory of the
	 *   tree (such a procfs) before it empties it.
	 *   FREEZE: u32 on (0 or 1) -> DONE
	 *           path is a START root: the PID namespace of the commands
	 *           started under it (a container's, include/kiln/pidns.h)
	 *           is frozen (1: its processes stop at their next return to
	 *           their program, as a cgroup freezer's; SIGKILL still ends
	 *           them) or thawed (0). ERROR ESRCH: no namespace of that
	 *           root is alive; EINVAL: a kernel without them (Linux).
	 *           Older agents answer ERROR EINVAL (a compatible addition).
	 *   LIMIT:  u32 mib -> DONE
	 *           path is a START root, as for FREEZE: its namespace's
	 *           processes may map mib MiB together at most (0: no bound;
	 *           KILN_PR_PIDNS_MEMORY). Errors and older agents as FREEZE's.
	 *   CPU:    u32 millicpus -> DONE
	 *           the same for its CPU: at most millicpus / 1000 of the vCPU
	 *           (0: no bound; KILN_PR_PIDNS_CPU).
	 *   SHARES: u32 shares -> DONE
	 *           the same for its weight in the vCPU's time against the
	 *           VM's other namespaces, as cgroup cpu.shares (2..262144,
	 *           else ERROR EINVAL; KILN_PR_PIDNS_SHARES). Errors and older
	 *           agents as FREEZE's.
	 *   CHANGES: list of strings excluded -> CHANGE [DATA...]..., DONE
	 *           path is a START root ("/": the VM's, the container whose
	 *           rootfs the image is); what its processes changed in the
	 *           image's tree since the agent booted (include/kiln/rootchg.h),
	 *           for the host to replay onto the container's snapshot
	 *           (shim/rwlayer.c). excluded: absolute paths under path
	 *           (mount points, copied binds) whose subtrees are left out.
	 *           One CHANGE per changed node, parents before children; a
	 *           regular file's CHANGE is followed by exactly its size in
	 *           DATA frames. A directory whose names changed (or that is
	 *           new) has a NAMES change listing all its names now: the
	 *           host removes the others. ERROR ENOSYS: the guest kernel
	 *           does not note changes (Linux); ELOOP: deeper than
	 *           KILN_CHANGES_DEPTH; E2BIG: a directory's names exceed one
	 *           frame. Older agents answer ERROR EINVAL (a compatible
	 *           addition). No user trailer.
	 * Then, optionally, the user trailer (as on START): the operation runs
	 * with that user's effective ids and groups, so the file system's
	 * permissions apply to it, and what it creates is that user's; without
	 * one it runs as root. KILN_USER_GIVE changes that for the operations
	 * that write (see there).
	 */
	KILN_MSG_FILE_REQUEST,
	/* Both ways: file bytes, at most KILN_DATA_CHUNK per frame. */
	KILN_MSG_DATA,
	/* Both ways: the operation (or the data) is complete. Empty. */
	KILN_MSG_DONE,
	/* Agent: u32 mode (st_mode, Linux values), u64 size, i64 mtime
	 * (seconds), string name (basename; "/" for the root), string symlink
	 * target (empty if not a symlink), u32 nanoseconds of mtime (a
	 * compatible addition: older agents end the frame before it). */
	KILN_MSG_STAT,
	/* Agent: same layout as STAT, one per directory entry. */
	KILN_MSG_ENTRY,

	/* ---- info stream ---- */
	/* Agent, right after its HELLO answer, then the stream ends: string
	 * agent version, u64 uptime_ms, u64 mem_total_kb, u64 mem_free_kb,
	 * u32 nr_procs. */
	KILN_MSG_INFO,

	/* ---- exec and pty streams, continued ---- */
	/* Host, once, after HELLO, instead of START: u32 pid of a process
	 * started with KILN_FRAME_KEEP whose stream has ended (of the same
	 * stream kind). The agent answers STARTED (pid), the output it kept,
	 * then goes on as after START (STDIN, SIGNAL... then EXIT). ERROR
	 * ESRCH if no such process is waiting for a stream. */
	KILN_MSG_ATTACH,

	/* ---- port streams: a TCP connection inside the guest ---- */
	/* Host, once, after HELLO: u32 port (1..65535), u32 family
	 * (KILN_PORT_ANY: 127.0.0.1, then ::1 if that is refused; KILN_PORT_V4:
	 * 127.0.0.1 only; KILN_PORT_V6: ::1 only). Anything else: ERROR EINVAL.
	 * Then, optionally (KILN_HELLO_PEER agents), the peer trailer: u32
	 * version (KILN_PEER_V1), u32 family (4 or 6), 16 address bytes
	 * (network order; IPv4: the first 4, the others zero), u32 port
	 * (1..65535): the client whose connection the host forwards. Its
	 * server in the guest sees it as the peer of the connection it accepts
	 * (accept, getpeername: include/kiln/sockpeer.h; an IPv6 client to an
	 * IPv4 server, and any on a Linux guest, shows 127.0.0.1 instead).
	 * Another version, family or port, or nonzero bytes after an IPv4
	 * address, is ERROR EINVAL; a trailer cut short ERROR EPROTO.
	 * The agent connects, then answers CONNECTED, or ERROR (ECONNREFUSED:
	 * nothing listens there; ETIMEDOUT after KILN_PORT_CONNECT_MS).
	 *
	 * Then bytes go both ways as DATA frames (at most KILN_DATA_CHUNK
	 * each; the host may send DATA right after CONNECT, it is written once
	 * the connection is up). DONE, either way, is that side's half-close:
	 * from the host, the agent shuts down the socket's writing side once
	 * what came before is written; from the agent, the guest's peer closed
	 * its writing side (read reached end of file). Each side sends DONE at
	 * most once and no DATA after it. The stream ends when both DONEs have
	 * been sent and the host's bytes are written: the agent then shuts
	 * down its sending side (the host reads EOF) without a last frame of
	 * its own beyond its DONE. If the guest's peer stops reading (reset,
	 * or closed), the host's further DATA is dropped and the stream ends
	 * once the peer's output reached end of file. Either side reads only
	 * as fast as the other writes: the agent reads the socket only while
	 * its queue to the host has room, and the host's DATA only while what
	 * it holds for the socket is below its limit. ERROR from the agent
	 * (ECONNRESET: the peer reset the connection) or the host, or the host
	 * closing, ends the stream at once and closes the socket. */
	KILN_MSG_CONNECT,
	/* Agent: u32 family the connection was made over (4 or 6). */
	KILN_MSG_CONNECTED,

	/* ---- procs stream (KILN_HELLO_PROCS): the host sends only HELLO ---- */
	/* Agent, one per exec or pty process it has (started and not yet
	 * reported ended by an EXIT), then DONE, and the stream ends:
	 *   u32 pid, u64 tag (START's tag trailer, 0 if none), u32 kind
	 *   (KILN_STREAM_EXEC or KILN_STREAM_PTY), u32 state (KILN_PROC_*),
	 *   u32 flags (KILN_PROC_DETACHED).
	 * At most AGENT_MAX_STREAMS entries (one stream each). */
	KILN_MSG_PROC,

	/* ---- file streams, continued: CHANGES ---- */
	/* Agent: u32 kind (KILN_CHANGE_*), string path (relative to the
	 * request's root, no leading '/', "" for the root itself), then
	 *   NODE:  u32 mode (st_mode), u32 uid, u32 gid, i64 mtime (seconds),
	 *          u32 mtime nanoseconds, u64 size, string symlink target
	 *          (empty if not a symlink). A directory is made if missing,
	 *          a node of another type at path replaced.
	 *   NAMES: list of strings, the directory's names (no "." or "..").
	 *   LINK:  string target: path is a new name of the regular file
	 *          an earlier NODE of this stream named target (a hard
	 *          link; no DATA follows). At most KILN_CHANGES_LINKS files
	 *          are sent as links; the names of those beyond go as NODEs
	 *          of their own (their bytes each time). A compatible
	 *          addition: older agents never send it.
	 * Paths have no "." or ".." components and no empty ones. */
	KILN_MSG_CHANGE,

	KILN_MSG_MAX,
};

enum kiln_file_op {
	KILN_FILE_INVALID = 0,
	KILN_FILE_READ,
	KILN_FILE_WRITE,
	KILN_FILE_LIST,
	KILN_FILE_STAT,
	KILN_FILE_MKDIR,
	KILN_FILE_REMOVE,
	KILN_FILE_RENAME,
	KILN_FILE_UNTAR,
	KILN_FILE_FREEZE,
	KILN_FILE_LIMIT,
	KILN_FILE_CPU,
	KILN_FILE_CHANGES = 12,
	/* path: a directory the agent made (a pod container's root, copied
	 * in, and its binds): its nodes' change bits are cleared, in one
	 * call (KILN_PR_ROOTCHG_CLEAR_TREE, include/kiln/rootchg.h) or, on an
	 * older guest kernel, name by name (KILN_PR_ROOTCHG_CLEAR), so that
	 * a later CHANGES of it holds the container's own changes only.
	 * Answered by DONE, or ERROR (ENOSYS: the guest kernel does not note
	 * changes; ELOOP: deeper than KILN_CHANGES_DEPTH; E2BIG: more than
	 * KILN_ROOTCHG_TREE_MAX nodes). A compatible addition: an
	 * older agent answers ERROR EINVAL "unknown file operation". */
	KILN_FILE_BASE = 13,
	KILN_FILE_SHARES = 14,
	KILN_FILE_MAX = 15,
};

/* CHANGE's kinds */
#define KILN_CHANGE_NODE   1
#define KILN_CHANGE_NAMES  2
#define KILN_CHANGE_LINK   3
#define KILN_CHANGES_LINKS 16384 /* files with several names sent as links */
#define KILN_CHANGES_DEPTH 128   /* directory levels under the root */

/* UNTAR's flags */
#define KILN_UNTAR_DEV  0x1
#define KILN_UNTAR_PROC 0x2

#define KILN_EXIT_TIMEOUT 0x1 /* the command was killed at its timeout */
/* The command (or a process of its session) was killed for memory: by the
 * library OS, which had no page for it, or by the agent, which could not
 * hold its output. A compatible addition: older agents never set it. */
#define KILN_EXIT_OOM 0x2

/* The user trailer's flags: a user missing from the guest's /etc/passwd
 * means root instead of ERROR ESRCH (E2B's default user, on an image
 * without it). */
#define KILN_USER_OR_ROOT 0x1
/* On FILE_REQUEST: WRITE, MKDIR, REMOVE and RENAME run as root, as E2B's
 * envd does them, and what they create is given to the user (a WRITE's
 * file, which keeps the mode of the file it replaces; the directories
 * MKDIR makes, not those that were there). The other operations still run
 * as the user. A compatible addition: an older agent ignores it and runs
 * every operation as the user. */
#define KILN_USER_GIVE 0x2

/* PROC's state and flags */
#define KILN_PROC_STARTING             1 /* running; its STARTED is not sent yet */
#define KILN_PROC_RUNNING              2
#define KILN_PROC_EXITED               3   /* exited; its EXIT waits for a stream (detached) */
#define KILN_PROC_DETACHED             0x1 /* no stream holds it: ATTACH takes it */
#define KILN_TEST_STARTED_DELAY_MAX_MS 10000

/* CONNECT's family */
#define KILN_PORT_ANY        0
#define KILN_PORT_V4         4
#define KILN_PORT_V6         6
#define KILN_PORT_CONNECT_MS 10000
#define KILN_PEER_V1         1
#define KILN_PEER_LEN        28 /* the peer trailer's bytes */

#endif
