/* SPDX-License-Identifier: MIT */
/* containerd-shim-kiln-v2: containerd's runtime shim v2 for kiln. One shim
 * per pod (or lone container); the pod is one kiln VM (kiln-vmm, the agent
 * image initramfs over an erofs image of its first container's rootfs),
 * each further container of the pod a root of its own copied into that VM
 * (ctr_root.c); processes are agent exec or pty streams. main.c: the
 * command line (start, delete); ttrpc.c: the ttrpc server; task_rpc.c: the task
 * service's methods; task.c: the container's processes and VM; vm.c:
 * kiln-vmm and agent streams; frame_rd.c: an agent stream's frames read
 * through a buffer; spec.c: the OCI bundle's config.json;
 * jail.c: the VMM's jail; podcg.c: the VMM in the pod's cgroup
 * (linux.cgroupsPath); rootfs.c: the rootfs as an erofs image;
 * ctr_root.c: a pod container's root sent into the VM; io.c: the fifos;
 * events.c: task events to containerd; stats.c: metrics; net.c: the
 * guest's network in the pod's network namespace. */
#ifndef KILN_SHIM_H
#define KILN_SHIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SHIM_VERSION "kiln-shim 1"

/* ttrpc status codes (google.rpc.Code) that containerd maps to errdefs */
enum {
	RPC_OK = 0,
	RPC_INVALID_ARGUMENT = 3,
	RPC_NOT_FOUND = 5,
	RPC_ALREADY_EXISTS = 6,
	RPC_FAILED_PRECONDITION = 9,
	RPC_UNIMPLEMENTED = 12,
	RPC_INTERNAL = 13,
};

#define SHIM_MAX_RLIMITS 16 /* Linux's RLIM_NLIMITS; KILN_MAX_RLIMITS */

/* One of process.rlimits (rlimits.c). */
struct shim_rlimit {
	uint32_t resource; /* RLIMIT_* */
	uint64_t soft, hard;
};

/* What the OCI spec's process says (spec.c). */
struct proc_spec {
	char **argv, **env; /* NULL-terminated */
	char *cwd;
	uint32_t uid;
	bool terminal;
	uint16_t cols, rows;
	uint32_t n_rlimits;
	struct shim_rlimit rlimits[SHIM_MAX_RLIMITS];
};

/* linux.resources that have a meaning for the VM (spec_res.c). */
struct spec_res {
	uint32_t mem_mb;     /* the VM's RAM */
	uint64_t cpu_quota;  /* us of CPU per period for the VMM's leaf; 0: none */
	uint64_t cpu_period; /* us */
	uint64_t cpu_shares; /* its weight, as cgroup v1 shares; 0: none */
	uint32_t cpu_weight; /* unified's cpu.weight (cgroup v2), 0: none */
	bool cpu_unlimited;  /* quota -1 given: the jail's own bound (Update) */
	bool mem_set;        /* a memory limit was given (an app container's bound) */
};

/* What the owner's spec says of the VMM on the host (spec_pod.c). */
#define PODCG_PATH_MAX  1024 /* linux.cgroupsPath, as given and expanded */
#define PODCG_DEPTH_MAX 32
struct spec_pod {
	char cgroup[PODCG_PATH_MAX + 1]; /* from a hierarchy's root, "/a/b"; "" none */
	bool has_oom;
	int oom_score_adj; /* process.oomScoreAdj, clamped to -1000..1000 */
};

/* A bind mount of the spec (spec_mounts.c), copied into the guest by
 * binds.c: src and dst absolute, without "." or ".." components. */
struct shim_bind {
	char *src, *dst;
	bool ro;
};
#define SPEC_SHARES_DEFAULT 1024 /* cpu.shares' default, the guest's too */
#define SPEC_MAX_MOUNTS     1024 /* entries of the spec's mounts */
#define SPEC_MAX_BINDS      64   /* bind mounts among them */
struct spec_binds {
	size_t n;
	struct shim_bind *v;
};

enum proc_state { P_CREATED, P_RUNNING, P_STOPPED };

struct ctr;
struct shim_net;

struct proc {
	struct proc *next;
	struct ctr *ctr; /* the container it belongs to */
	char *exec_id;   /* "" for the container's init */
	struct proc_spec spec;
	char *stdin_path, *stdout_path, *stderr_path;
	enum proc_state state;
	uint32_t pid;      /* in the guest, once started */
	uint32_t task_pid; /* what containerd was told: the VMM's for the init */
	uint32_t exit_status;
	int64_t exited_ns;
	int fd;                /* its agent stream, -1 before start and after exit */
	pthread_mutex_t wlock; /* writes to fd */
	bool stdin_closed;
	bool starting; /* Start is talking to the agent (unlocked) */
	pthread_t reader, stdin_pump;
	bool has_reader, has_pump;
	int wake[2];  /* CloseIO to the stdin pump; -1 when none */
	int waiters;  /* Wait calls blocked on it */
	bool deleted; /* off the list; the last waiter frees it */
};

struct vm {
	pid_t pid; /* kiln-vmm, 0 if none */
	bool paused, dead;
	char console[4096]; /* its console log (in the bundle) */
	char api[128], vsock[128];
	/* kiln-vmm's jail (jail.c): its uid and gid (0: not jailed by us),
	 * the lock that holds that id, KILN_SHIM_NO_JAIL */
	unsigned jail_id;
	int jail_lock;
	bool no_jail;
};

/* A container (a task of containerd's): the pod's first one owns the VM
 * (its rootfs is the VM's root), the others have a root of their own in
 * it, guest_root (ctr_root.c). */
struct ctr {
	struct ctr *next;
	char *id, *bundle;
	struct proc *procs; /* its init ("") and execs */
	struct spec_binds binds;
	char *image;      /* the VM's root: the rootfs's erofs image (owner only) */
	int image_lock;   /* holds it in the cache (cache.c), or -1 */
	char *root_path;  /* the spec's root.path */
	char *guest_root; /* NULL: the VM's "/" (the owner); else its root in the guest */
	bool rootfs_mounted;
	bool owner;      /* the VM is its */
	bool paused;     /* an app container frozen in the guest (ctr_freeze) */
	bool pid_shared; /* its processes join the owner's guest PID namespace (pidshare.c) */
	/* an app container's memory bound, its PID namespace's in the guest
	 * (ctr_limit; 0: none, the pod's VM's) */
	uint32_t mem_mb;
	uint32_t cpu_milli; /* its CPU bound in 1/1000 of the vCPU (0: none), the same way */
	/* its weight against the pod's other containers, cpu.shares (ctr_shares;
	 * 0: none given, the guest's default 1024) */
	uint32_t cpu_shares;
	bool deleted;   /* its init was deleted: only Wait and State still see it */
	bool rw_saving; /* its writes are being saved to its snapshot (rwlayer.c) */
	bool rw_base;   /* an app container's copied root is its base (ctr_root_base) */
};

struct shim {
	char *id, *ns, *bundle, *address, *publish_binary; /* the first container's */
	char socket_path[256];
	bool grouped;           /* the socket is the pod's (an annotation named it) */
	pthread_mutex_t lock;   /* everything below */
	pthread_cond_t changed; /* a process exited, the VM died */
	struct ctr *ctrs;       /* the owner last (the first created) */
	struct vm vm;
	struct spec_res res;  /* the VM's: the owner's spec */
	struct spec_pod pod;  /* the VMM's cgroup and OOM score: the owner's spec */
	struct shim_net *net; /* the VM's network (net.c), while it runs */
};

extern struct shim g_shim;

void *shim_exit_soon(void *unused);
void shim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t shim_env_num(const char *name, uint64_t def); /* cache.c */
int64_t now_ns(void);

/* spec.c */
/* *root_path: the spec's root.path (malloc'd, NULL if none). */
/* pod: the VMM's cgroup and OOM score, for the owner (NULL: not read). */
int spec_load_bundle(const char *bundle, struct proc_spec *p, struct spec_res *res,
                     struct spec_binds *binds, char **root_path, struct spec_pod *pod, char *msg,
                     size_t n);
struct json_t;
int spec_parse_pod(struct json_t *spec, struct spec_pod *pod, char *msg, size_t n);
/* podcg_parse.c: linux.cgroupsPath (len bytes), cgroupfs or systemd form,
 * as a path from a hierarchy's root into out (cap bytes); 0, or -EINVAL
 * with msg saying what is wrong with it. */
int podcg_parse(const char *p, size_t len, char *out, size_t cap, char *msg, size_t n);
int spec_parse_mounts(struct json_t *mounts, struct spec_binds *b, char *msg, size_t n);
void spec_binds_free(struct spec_binds *b);
int spec_parse_resources(struct json_t *res, struct spec_res *r, char *msg, size_t n);
int spec_parse_rlimits(struct json_t *rlimits, struct proc_spec *p, char *msg, size_t n);
int spec_parse_process(const char *json, size_t len, struct proc_spec *p, char *msg, size_t n);
void spec_free(struct proc_spec *p);

/* rootfs.c: mounts (type, source, options joined) onto bundle/rootfs (or,
 * with none, the absolute root_path) and packs it; *image is the erofs file (malloc'd). */
struct shim_mount {
	const char *type, *source;
	char **options;
	size_t n_options;
};
/* *lock: an fd holding the cached image in use (cache.c), or -1. */
int rootfs_prepare(const char *bundle, const char *root_path, const struct shim_mount *m, size_t n,
                   char **image, bool *mounted, int *lock, char *msg, size_t len);
void rootfs_release(const char *bundle, bool mounted, int *lock);

/* cache.c: the rootfs image cache. cache_use: path is there and now held
 * (*lock, a shared flock) or -ENOENT; cache_prune: removes what no shim
 * holds, oldest use first, while the cache is over max_bytes or an image
 * unused for max_age_s; returns how many files went, or -errno. */
int cache_use(const char *path, int *lock);
int cache_prune(const char *dir, uint64_t max_bytes, int64_t max_age_s);
void cache_prune_env(const char *dir);

/* rootfs_mount: only the mounts (or the absolute root_path) onto
 * bundle/rootfs; dir gets the tree's path. */
int rootfs_mount(const char *bundle, const char *root_path, const struct shim_mount *m, size_t n,
                 char *dir, size_t dir_len, bool *mounted, char *msg, size_t len);

/* binds.c: the spec's bind mounts copied into the booted guest (their
 * destinations already inside the container's root). */
int binds_copy(struct shim *s, const struct spec_binds *b, char *msg, size_t n);

/* ctr_root.c: a pod container's root in the guest: the tree at dir sent
 * as a tar stream into c->guest_root (the device nodes linked in);
 * removing it again at delete. Unlocked (agent streams). */
int ctr_root_copy(struct shim *s, struct ctr *c, const char *dir, char *msg, size_t n);
void ctr_root_remove(struct shim *s, const char *guest_root);
/* The copied root's change bits cleared (the agent's BASE): c->rw_base.
 * An older guest that cannot is logged, not an error. */
int ctr_root_base(struct shim *s, struct ctr *c, char *msg, size_t n);
/* Pause (on) or Resume of a pod's app container: the guest freezes or
 * thaws its processes (its PID namespace, include/kiln/pidns.h); 0 or
 * -errno with msg. */
int ctr_freeze(struct shim *s, struct ctr *c, bool on, char *msg, size_t n);
/* A guest file's text (at most cap - 1 bytes, NUL-ended) through the
 * agent's READ; 0 or -errno with msg. */
int ctr_read_file(struct shim *s, const char *path, char *buf, size_t cap, char *msg, size_t n);
/* An app container's processes bounded to mib MiB together (0: none). */
int ctr_limit(struct shim *s, struct ctr *c, uint32_t mib, char *msg, size_t n);
/* ... and to milli / 1000 of the vCPU (0: none). */
int ctr_cpu(struct shim *s, struct ctr *c, uint32_t milli, char *msg, size_t n);
/* ... and weighted in the vCPU's time against the pod's other containers
 * (shares 2..262144, as cpu.shares). */
int ctr_shares(struct shim *s, struct ctr *c, uint32_t shares, char *msg, size_t n);
/* linux.resources' CPU quota as thousandths of a CPU (0: none). */
uint32_t spec_res_millicpus(const struct spec_res *r);
/* Its CPU weight as shares (2..262144; unified's cpu.weight, in proportion,
 * before cpu.shares), 0: none given. */
uint32_t spec_res_shares(const struct spec_res *r);

/* rwlayer.c: what the container changed in the VM's root replayed onto
 * its mounted rootfs (containerd's snapshot); 0 or -errno with msg.
 * Unlocked (an agent stream). */
int rwlayer_save(struct shim *s, struct ctr *c, char *msg, size_t n);
/* Whether c's writes are saved, and where to (its rootfs on the host). */
bool rwlayer_root(const struct ctr *c, char *out, size_t n);

/* jail.c: the VMM's jail id and writable directory (cwd: the bundle). */
int jail_prepare(struct shim *s, char *msg, size_t n);
/* The VMM has ended: its lock file, cgroup leaves and the pod's cgroup go. */
void jail_release(struct shim *s);
/* The same after a shim that died (its VMM killed): from BUNDLE/jail.id. */
void jail_cleanup(const char *bundle);
/* Where the VMM is to write the pause snapshot (absolute), and moving
 * what it wrote to BUNDLE/pause.snap. 0 or -errno (msg filled in). */
int jail_snap_target(const struct shim *s, char *out, size_t len);
int jail_take_snapshot(const struct shim *s, char *msg, size_t n);

/* spec_ns.c: fn called for each linux.namespaces entry of type in
 * bundle/config.json, with its index and path (NULL: none, or ""), which
 * is checked to be absolute first; stops at the first error (-errno, msg
 * filled in), which it returns. */
typedef int (*spec_ns_fn)(void *arg, size_t i, const char *path, char *msg, size_t n);
int spec_each_ns(const char *bundle, const char *type, spec_ns_fn fn, void *arg, char *msg,
                 size_t n);

/* pidshare.c: whether the spec (bundle/config.json) has the container join
 * its pod's PID namespace (linux.namespaces' pid path /proc/VMM/ns/pid);
 * vmm 0 (the pod's first container) has none to join. 0 or -EINVAL. */
int pidshare_spec(const char *bundle, pid_t vmm, bool *share, char *msg, size_t n);

/* net.c: the guest's egress and DNS served from the network namespace of
 * the owner's spec (bundle/config.json), the pod's resolv.conf bind among
 * b for its resolver; once the VM is booted (its vsock socket named). */
int net_start(struct shim *s, const char *bundle, const struct spec_binds *b, char *msg, size_t n);
void net_stop(struct shim *s);
/* net_in.c: the guest's listeners at the pod's addresses, from the network
 * thread (ns->listen, set here; agent: the VM's vsock socket). */
struct net_sb;
struct net_in;
struct net_in *net_in_new(struct net_sb *ns, const char *agent);
void net_in_free(struct net_in *ni);

/* podcg.c: the pod's cgroup (s->pod.cgroup) made where missing in every
 * mounted hierarchy (recorded in the bundle), and the files the VMM's
 * child writes "0" to before its exec to join it (j; none when the spec
 * names none or the shim is not root). 0, or -errno with msg. */
#define PODCG_MAX_H 16
struct podcg_join {
	size_t n;
	char file[PODCG_MAX_H][PODCG_PATH_MAX + 300];
};
int podcg_prepare(struct shim *s, struct podcg_join *j, char *msg, size_t n);
/* The VMM has ended: what podcg_prepare made for it goes (the shim's
 * bundle, or one of a shim that died). */
void podcg_remove(const char *bundle);

/* cgroup.c: the CPU limits r on the VMM's cgroup leaf, once it runs. */
int cgroup_apply(struct shim *s, const struct spec_res *r, char *msg, size_t n);
/* The ended VMM's leaves, kiln.slice/vmm-ID under the shim's cgroups. */
void cgroup_remove_leaves(unsigned id);

/* vm.c */
/* kiln-vmm over image, its agent answering; cwd: the owner's bundle. */
int vm_boot(struct shim *s, const char *image, char *msg, size_t n);
void vm_stop(struct shim *s);
int vm_api(struct shim *s, const char *req, char *reply, size_t n);
/* vm_dial.c */
/* A new agent stream of kind (KILN_STREAM_*), our HELLO sent: its fd, or
 * -errno, which vm_dial_explain turns into words. ms bounds the dial. */
int vm_dial(struct shim *s, uint32_t kind, int ms);
/* A stream to guest port through the VMM's vsock socket: its fd, or
 * -EHOSTDOWN (no VMM listens), -ETIMEDOUT (no answer within ms; ms < 0:
 * no limit), -ECONNREFUSED (the guest refused, also when tried again),
 * -EPROTO, or another -errno. */
int vm_dial_port(const char *vsock, unsigned port, int ms);
/* What err from a dial of ms means, in words, for "cannot reach ...: %s". */
void vm_dial_explain(int err, const char *vsock, int ms, char *msg, size_t n);
int vm_connect_unix(const char *path);
int vm_write_all(int fd, const void *p, size_t n);
int64_t vm_mono_ms(void); /* CLOCK_MONOTONIC */
/* The guest's memory and process count, from its agent's INFO stream. */
int vm_info(struct shim *s, uint64_t *mem_total_kb, uint64_t *mem_free_kb, uint32_t *nr_procs);
/* A new agent stream with the process's START sent; STARTED read. */
int vm_proc_start(struct shim *s, struct proc *p, char *msg, size_t n);
int vm_proc_signal(struct proc *p, uint32_t sig);
int vm_proc_resize(struct proc *p, uint16_t cols, uint16_t rows);
int vm_proc_close_stdin(struct proc *p);
int vm_proc_stdin(struct proc *p, const void *data, size_t n);
/* One frame; *payload malloc'd. ms < 0: no time limit. */
struct kiln_frame;
int agent_read_frame(int fd, struct kiln_frame *f, uint8_t **payload, int ms);
/* The next frame is of type want: 0; its ERROR, or another frame, or a
 * broken stream: -errno, and why says which (the agent's message). */
int agent_expect(int fd, uint16_t want, int ms, char *why, size_t n);

/* io.c: pump the agent stream's output into the process's fifos until EXIT */
void *io_reader(void *arg);
void *io_stdin(void *arg);
/* CloseIO: the end of stdin once the pump has passed on what it holds. */
void io_stdin_close(struct proc *p);
/* The process ended (exit status, or 255 if its stream broke). Locked. */
void proc_exited(struct shim *s, struct proc *p, uint32_t status);

/* stats.c: Stats' reply (locked; unlocks around the agent's answer) */
int stats_reply(struct shim *s, struct ctr *c, uint8_t **out, size_t *out_len, char *msg, size_t n);

/* events.c: task events to containerd, published in order, off the
 * caller's thread. pid: the event's (the VMM's for the init). */
enum shim_event { EV_CREATE, EV_START, EV_EXEC_ADDED, EV_EXIT, EV_DELETE, EV_PAUSED, EV_RESUMED };
void event_task(enum shim_event ev, const struct proc *p, uint32_t pid);
void events_flush(void);

/* ttrpc.c */
int ttrpc_serve(int listen_fd);
/* task_rpc.c: one request; *out (malloc'd) gets the reply payload. */
int task_call(const char *method, const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len,
              char *msg, size_t n);

#endif
