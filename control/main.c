/* SPDX-License-Identifier: MIT */
/*
 * kilnd: the kiln control plane for one host.
 *
 *   kilnd [--data-dir DIR] [--socket PATH] [--listen-tcp 127.0.0.1:PORT]
 *         [--envd-listen 127.0.0.1:PORT] [--vmm PATH] [--kernel PATH]
 *         [--initrd PATH] [--images DIR] [options]
 *
 * Serves the HTTP API on a unix socket (and optionally on TCP with an API
 * key), runs one kiln-vmm per sandbox and keeps their state in SQLite so a
 * restarted kilnd picks its sandboxes up again. Sandboxes outlive kilnd.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "auth/auth.h"
#include "browser/cdp.h"
#include "events/events.h"
#include "sandbox/console.h"
#include "sandbox/bootfile.h"
#include "sandbox/dir_pool.h"
#include "sandbox/host_cpuid.h"
#include "api/api.h"
#include "api/metrics_hist.h"
#include "envd/envd.h"
#include "net/net.h"
#include "kilnd.h"
#include "sandbox/sandbox.h"
#include "sandbox/run_dir.h"
#include "sandbox/store.h"
#include "sandbox/template.h"
#include "util.h"

#define HOUSEKEEPING_PERIOD 30.0

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: kilnd [options]\n"
	        "\n"
	        "The kiln control plane: an HTTP API for sandboxes, one kiln-vmm per sandbox.\n"
	        "\n"
	        "  --data-dir DIR        state: kilnd.db, sandboxes/ (a paused one is a\n"
	        "                        snapshot there), templates/, api-key, the host's\n"
	        "                        CPUID table for the VMMs (.host-cpuid), spare/\n"
	        "                        (sandbox directories for reuse) (default\n"
	        "                        ~/.local/share/kiln)\n"
	        "  --socket PATH         API unix socket (default DIR/kilnd.sock with --data-dir,\n"
	        "                        else $XDG_RUNTIME_DIR/kiln/kilnd.sock or DIR/kilnd.sock)\n"
	        "  --listen-tcp H:PORT   also serve on TCP (e.g. 127.0.0.1:3000); requires the\n"
	        "                        API key in X-API-Key or Authorization: Bearer\n"
	        "  --api-key KEY         the key (default: DIR/api-key, created when needed)\n"
	        "  --envd-listen H:PORT  serve E2B's in-sandbox API (envd) on its own TCP port,\n"
	        "                        for E2B_SANDBOX_URL (also reachable on --listen-tcp\n"
	        "                        with the E2b-Sandbox-Id header)\n"
	        "  --domain NAME[:PORT]  sandboxes' ports answer as PORT-ID.NAME (E2B's\n"
	        "                        getHost); give the :PORT clients reach kilnd at\n"
	        "                        (default: localhost)\n"
	        "  --browser-launcher P  the program in the guest that starts the browser on\n"
	        "                        first use of /sandboxes/ID/cdp (default\n"
	        "                        " CDP_DEFAULT_LAUNCHER ")\n"
	        "  --browser-port N      the browser's DevTools port in the guest (9222)\n"
	        "  --vmm PATH            kiln-vmm (default: next to kilnd)\n"
	        "  --kernel PATH         guest kernel (default: ../guest/kiln-kernel from kilnd)\n"
	        "  --initrd PATH         initramfs with the agent and busybox, the built-in\n"
	        "                        image 'busybox' (default: ../initramfs/agent.cpio\n"
	        "                        from kilnd)\n"
	        "  --images DIR          images by name: DIR/NAME.erofs (default: ../images\n"
	        "                        from kilnd, where make images puts them)\n"
	        "  --run-dir DIR         the sandboxes' sockets, console.log and vmm.pid, which\n"
	        "                        last as long as their VMM: a tmpfs is cheapest\n"
	        "                        (default: /run/kilnd-HASH or /dev/shm/kilnd-HASH\n"
	        "                        when the data directory is not on a tmpfs)\n"
	        "  --image-initrd PATH   initramfs booted over an image, the agent alone\n"
	        "                        (default: ../initramfs/agent-image.cpio from kilnd)\n"
	        "  --run-template NAME   a create that names no image or template (kiln run's)\n"
	        "                        is a clone of template NAME when NAME is a plain\n"
	        "                        boot of the built-in image (no warm-up, no egress\n"
	        "                        rules, the operator's), from its warm pool if it has\n"
	        "                        one: the same fresh sandbox, in a few ms (default:\n"
	        "                        none, every such create boots)\n"
	        "  --resume-mode MODE    how paused sandboxes come back: eager (all memory\n"
	        "                        loaded at once on every CPU while the guest runs;\n"
	        "                        the default) or lazy (memory mostly on first touch)\n"
	        "  --max-sandboxes N     running sandboxes at once (default 64)\n"
	        "  --boot-timeout S      seconds for a new sandbox's agent to answer (default 10)\n"
	        "  --default-timeout S   sandbox lifetime when a request gives none (default 300)\n"
	        "  --max-timeout S       longest lifetime a request may ask for (default 86400)\n"
	        "  --retain S            seconds dead sandboxes stay listed (default 3600)\n"
	        "  --max-upload BYTES    largest file upload (default 8G)\n"
	        "  --dns-server LIST     the sandboxes' lookups go to these (ADDR[:PORT],...)\n"
	        "                        instead of /etc/resolv.conf's servers\n"
	        "  --console-max BYTES   a sandbox's console.log before it is rotated to\n"
	        "                        console.log.1 (default 4M)\n"
	        "  --metrics-interval S  how often each sandbox's CPU and memory are sampled\n"
	        "                        for the last hour's history (1 to 60, default 10)\n"
	        "  --events-keep D       how long events are kept (default 7d; s, m, h, d)\n"
	        "  --events-max N        events kept at most; the oldest go (default 100000)\n"
	        "  --sse-max-buffer B    a GET /events client that leaves more unread is\n"
	        "                        dropped (default 1M)\n"
	        "  --sse-heartbeat S     GET /events keep-alive comment period (default 15)\n"
	        "  --webhook URL         POST lifecycle events to http://HOST:PORT/PATH\n"
	        "  --webhook-secret F    the HMAC-SHA256 key of its Kiln-Signature (a file)\n"
	        "  --webhook-retries N   attempts after the first (default 5)\n"
	        "  --webhook-backoff S   first wait before a retry, doubled each time (1)\n"
	        "  --max-conns N         client connections at once (default 1024; the unix\n"
	        "                        socket keeps 64 of them, at most a quarter)\n"
	        "  --max-unauth-conns N  TCP connections before their first authenticated\n"
	        "                        request (default 64, at most half of --max-conns)\n"
	        "  --unauth-timeout S    such a connection's idle time (default 5)\n"
	        "  --header-timeout S    to receive a request's headers (default 10)\n"
	        "  --idle-timeout S      keep-alive connection idle time (default 60)\n"
	        "  --body-timeout S      without request body progress (default 30)\n"
	        "  --write-timeout S     without progress writing to a client (default 30)\n"
	        "  --no-jail             start every kiln-vmm with --no-jail (debugging only:\n"
	        "                        no namespaces, uid, cgroup or seccomp of its own)\n"
	        "  --jail-uid-base N     VMMs run as uid and gid N+1, N+2, ... (one each;\n"
	        "                        default 900000); kilnd must be root for this\n"
	        "  --jail-mem-max-mb N   each VMM's cgroup memory.max, in MiB (default: the\n"
	        "                        sandbox's memory + 1/8 + 128 MiB)\n"
	        "  -v, --verbose         debug logging\n"
	        "  -h, --help            this text\n"
	        "  --version             kilnd's version\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kilnd: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* An existing data directory is kilnd's alone (it holds the API key and
 * every sandbox's files): 0700, owned by kilnd's user, not a link. */
static void tighten_data_dir(const char *dir)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		die("%s: %s (the data directory must be a directory, not a link)", dir,
		    strerror(errno));
	if (fstat(fd, &st))
		die("%s: %s", dir, strerror(errno));
	if (st.st_uid != geteuid())
		die("%s belongs to uid %u, not to kilnd's user (uid %u): use a directory of your "
		    "own",
		    dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if ((st.st_mode & 07777) != 0700) {
		log_warn("%s was mode %04o: making it 0700", dir, (unsigned)(st.st_mode & 07777));
		if (fchmod(fd, 0700))
			die("cannot make %s mode 0700: %s", dir, strerror(errno));
	}
	close(fd);
}

static double parse_seconds(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || v <= 0 || v > 1e7)
		die("%s: expected a positive number of seconds, got '%s'", opt, s);
	return v;
}

/* 90, 90s, 30m, 12h, 7d: seconds. */
static long long parse_duration(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);
	double unit = !strcmp(end, "") || !strcmp(end, "s") ? 1
	              : !strcmp(end, "m")                   ? 60
	              : !strcmp(end, "h")                   ? 3600
	              : !strcmp(end, "d")                   ? 86400
	                                                    : 0;

	if (end == s || !unit || v <= 0 || v * unit > 1e10)
		die("%s: expected a duration like 90s, 30m, 12h or 7d, got '%s'", opt, s);
	return (long long)(v * unit);
}

static unsigned long long parse_size(const char *opt, const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end || !v)
		die("%s: expected a size like 100M, got '%s'", opt, s);
	return v;
}

/* A path relative to the directory holding the kilnd binary. */
static char *beside_binary(const char *rel)
{
	char self[PATH_MAX], *p;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return strdup(rel);
	self[n] = 0;
	if (asprintf(&p, "%s/%s", dirname(self), rel) < 0)
		return NULL;
	return p;
}

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *dir = strdup(path);
	int fd, probe;

	if (strlen(path) >= sizeof(sa.sun_path))
		die("socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	if (mkdir_p(dirname(dir), 0700))
		die("cannot create the directory of %s: %s", path, strerror(errno));
	free(dir);
	/* A live socket means another kilnd; a dead one is left over. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe >= 0 && !connect(probe, (struct sockaddr *)&sa, sizeof(sa)))
		die("another kilnd is already listening on %s", path);
	if (probe >= 0)
		close(probe);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("cannot bind %s: %s", path, strerror(errno));
	chmod(path, 0600);
	if (listen(fd, 256))
		die("listen %s: %s", path, strerror(errno));
	return fd;
}

static int listen_tcp(const char *opt, const char *spec)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char host[64];
	const char *colon = strrchr(spec, ':');
	int fd, one = 1;
	long port;

	if (!colon || (size_t)(colon - spec) >= sizeof(host))
		die("%s: expected HOST:PORT, got '%s'", opt, spec);
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = 0;
	port = strtol(colon + 1, NULL, 10);
	if (port <= 0 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("%s: expected an IPv4 HOST:PORT, got '%s'", opt, spec);
	if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127)
		log_warn("%s %s is not a loopback address: keys and tokens are sent in clear", opt,
		         spec);
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 256))
		die("cannot listen on %s: %s", spec, strerror(errno));
	return fd;
}

/* The API key: given, or DIR/api-key, created on first use. The e2b_ prefix
 * keeps E2B SDKs that check the key's format happy. */
static char *load_api_key(const char *data_dir)
{
	char *path, *key;
	char hex[41];
	size_t len;
	int fd;

	if (asprintf(&path, "%s/api-key", data_dir) < 0)
		return NULL;
	key = read_small_file(path, 256, &len);
	if (key) {
		while (len && (key[len - 1] == '\n' || key[len - 1] == ' '))
			key[--len] = 0;
		if (len) {
			free(path);
			return key;
		}
		free(key);
	}
	if (random_hex(hex, 20))
		die("no randomness for an API key");
	if (asprintf(&key, "e2b_%s", hex) < 0)
		die("out of memory");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || dprintf(fd, "%s\n", key) < 0)
		die("cannot write %s: %s", path, strerror(errno));
	close(fd);
	log_info("created API key in %s", path);
	free(path);
	return key;
}

/* One kilnd per data directory: a lock on kilnd.pid. */
static int lock_data_dir(const char *data_dir)
{
	char *path, pid[32];
	int fd;

	if (asprintf(&path, "%s/kilnd.pid", data_dir) < 0)
		die("out of memory");
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		die("cannot open %s: %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ssize_t n = read(fd, pid, sizeof(pid) - 1);

		pid[n > 0 ? n : 0] = 0;
		die("another kilnd (pid %d) is using %s", atoi(pid), data_dir);
	}
	if (ftruncate(fd, 0) == 0 && dprintf(fd, "%d\n", getpid()) < 0)
		log_warn("cannot write %s", path);
	free(path);
	return fd;
}

static void cfg_free(struct kilnd_cfg *cfg)
{
	free(cfg->data_dir);
	free(cfg->socket_path);
	free(cfg->tcp_listen);
	free(cfg->envd_listen);
	free(cfg->api_key);
	free(cfg->domain);
	free(cfg->browser_launcher);
	free(cfg->vmm);
	free(cfg->kernel);
	free(cfg->initrd);
	free(cfg->images_dir);
	free(cfg->run_dir);
	free(cfg->image_initrd);
	free(cfg->run_template);
	free(cfg->dns_servers);
	free(cfg->webhook_url);
	free(cfg->webhook_secret_file);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	log_info("signal %d: shutting down (sandboxes keep running)", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

static void on_housekeeping(struct ev_loop *loop, ev_timer *w, int revents)
{
	sb_housekeeping(w->data);
	events_prune(w->data);
	pool_kick(w->data, 0);
	bootfile_gc(w->data);
}

enum {
	OPT_DATA_DIR = 256,
	OPT_SOCKET,
	OPT_TCP,
	OPT_ENVD,
	OPT_API_KEY,
	OPT_DOMAIN,
	OPT_BROWSER_LAUNCHER,
	OPT_BROWSER_PORT,
	OPT_VMM,
	OPT_KERNEL,
	OPT_INITRD,
	OPT_IMAGES,
	OPT_RUN_DIR,
	OPT_IMAGE_INITRD,
	OPT_RUN_TEMPLATE,
	OPT_RESUME_MODE,
	OPT_MAX_SB,
	OPT_BOOT_TIMEOUT,
	OPT_DEFAULT_TIMEOUT,
	OPT_MAX_TIMEOUT,
	OPT_RETAIN,
	OPT_MAX_UPLOAD,
	OPT_DNS_SERVER,
	OPT_MAX_CONNS,
	OPT_EVENTS_KEEP,
	OPT_EVENTS_MAX,
	OPT_SSE_MAX_BUF,
	OPT_SSE_HEARTBEAT,
	OPT_WEBHOOK,
	OPT_WEBHOOK_SECRET,
	OPT_WEBHOOK_RETRIES,
	OPT_WEBHOOK_BACKOFF,
	OPT_CONSOLE_MAX,
	OPT_METRICS_INTERVAL,
	OPT_MAX_UNAUTH,
	OPT_UNAUTH_TIMEOUT,
	OPT_HEADER_TIMEOUT,
	OPT_IDLE_TIMEOUT,
	OPT_BODY_TIMEOUT,
	OPT_WRITE_TIMEOUT,
	OPT_NO_JAIL,
	OPT_JAIL_UID_BASE,
	OPT_JAIL_MEM_MAX,
};

static void parse_args(struct kilnd_cfg *cfg, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"data-dir", required_argument, NULL, OPT_DATA_DIR},
	    {"socket", required_argument, NULL, OPT_SOCKET},
	    {"listen-tcp", required_argument, NULL, OPT_TCP},
	    {"envd-listen", required_argument, NULL, OPT_ENVD},
	    {"api-key", required_argument, NULL, OPT_API_KEY},
	    {"domain", required_argument, NULL, OPT_DOMAIN},
	    {"browser-launcher", required_argument, NULL, OPT_BROWSER_LAUNCHER},
	    {"browser-port", required_argument, NULL, OPT_BROWSER_PORT},
	    {"vmm", required_argument, NULL, OPT_VMM},
	    {"kernel", required_argument, NULL, OPT_KERNEL},
	    {"initrd", required_argument, NULL, OPT_INITRD},
	    {"images", required_argument, NULL, OPT_IMAGES},
	    {"run-dir", required_argument, NULL, OPT_RUN_DIR},
	    {"image-initrd", required_argument, NULL, OPT_IMAGE_INITRD},
	    {"run-template", required_argument, NULL, OPT_RUN_TEMPLATE},
	    {"resume-mode", required_argument, NULL, OPT_RESUME_MODE},
	    {"max-sandboxes", required_argument, NULL, OPT_MAX_SB},
	    {"boot-timeout", required_argument, NULL, OPT_BOOT_TIMEOUT},
	    {"default-timeout", required_argument, NULL, OPT_DEFAULT_TIMEOUT},
	    {"max-timeout", required_argument, NULL, OPT_MAX_TIMEOUT},
	    {"retain", required_argument, NULL, OPT_RETAIN},
	    {"max-upload", required_argument, NULL, OPT_MAX_UPLOAD},
	    {"dns-server", required_argument, NULL, OPT_DNS_SERVER},
	    {"max-conns", required_argument, NULL, OPT_MAX_CONNS},
	    {"events-keep", required_argument, NULL, OPT_EVENTS_KEEP},
	    {"events-max", required_argument, NULL, OPT_EVENTS_MAX},
	    {"sse-max-buffer", required_argument, NULL, OPT_SSE_MAX_BUF},
	    {"sse-heartbeat", required_argument, NULL, OPT_SSE_HEARTBEAT},
	    {"webhook", required_argument, NULL, OPT_WEBHOOK},
	    {"webhook-secret", required_argument, NULL, OPT_WEBHOOK_SECRET},
	    {"webhook-retries", required_argument, NULL, OPT_WEBHOOK_RETRIES},
	    {"webhook-backoff", required_argument, NULL, OPT_WEBHOOK_BACKOFF},
	    {"console-max", required_argument, NULL, OPT_CONSOLE_MAX},
	    {"metrics-interval", required_argument, NULL, OPT_METRICS_INTERVAL},
	    {"max-unauth-conns", required_argument, NULL, OPT_MAX_UNAUTH},
	    {"unauth-timeout", required_argument, NULL, OPT_UNAUTH_TIMEOUT},
	    {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
	    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
	    {"body-timeout", required_argument, NULL, OPT_BODY_TIMEOUT},
	    {"write-timeout", required_argument, NULL, OPT_WRITE_TIMEOUT},
	    {"no-jail", no_argument, NULL, OPT_NO_JAIL},
	    {"jail-uid-base", required_argument, NULL, OPT_JAIL_UID_BASE},
	    {"jail-mem-max-mb", required_argument, NULL, OPT_JAIL_MEM_MAX},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_DATA_DIR:
			free(cfg->data_dir);
			cfg->data_dir = strdup(optarg);
			break;
		case OPT_SOCKET:
			free(cfg->socket_path);
			cfg->socket_path = strdup(optarg);
			break;
		case OPT_TCP:
			free(cfg->tcp_listen);
			cfg->tcp_listen = strdup(optarg);
			break;
		case OPT_ENVD:
			free(cfg->envd_listen);
			cfg->envd_listen = strdup(optarg);
			break;
		case OPT_API_KEY:
			free(cfg->api_key);
			cfg->api_key = strdup(optarg);
			break;
		case OPT_DOMAIN:
			if (!*optarg || strlen(optarg) > 200 || strpbrk(optarg, "/ \t\r\n"))
				die("--domain: expected a host name (and :port), got '%s'", optarg);
			free(cfg->domain);
			cfg->domain = strdup(optarg);
			break;
		case OPT_BROWSER_LAUNCHER:
			if (optarg[0] != '/')
				die("--browser-launcher: expected an absolute path in the guest, "
				    "got '%s'",
				    optarg);
			free(cfg->browser_launcher);
			cfg->browser_launcher = strdup(optarg);
			break;
		case OPT_BROWSER_PORT:
			cfg->browser_port = (unsigned)parse_seconds("--browser-port", optarg);
			if (cfg->browser_port < 1 || cfg->browser_port > 65535)
				die("--browser-port: expected 1..65535, got '%s'", optarg);
			break;
		case OPT_VMM:
			free(cfg->vmm);
			cfg->vmm = strdup(optarg);
			break;
		case OPT_KERNEL:
			free(cfg->kernel);
			cfg->kernel = strdup(optarg);
			break;
		case OPT_INITRD:
			free(cfg->initrd);
			cfg->initrd = strdup(optarg);
			break;
		case OPT_IMAGES:
			free(cfg->images_dir);
			cfg->images_dir = strdup(optarg);
			break;
		case OPT_RUN_DIR:
			free(cfg->run_dir);
			cfg->run_dir = strdup(optarg);
			break;
		case OPT_IMAGE_INITRD:
			free(cfg->image_initrd);
			cfg->image_initrd = strdup(optarg);
			break;
		case OPT_RUN_TEMPLATE:
			free(cfg->run_template);
			cfg->run_template = strdup(optarg);
			break;
		case OPT_RESUME_MODE:
			if (strcmp(optarg, "lazy") && strcmp(optarg, "eager"))
				die("--resume-mode: expected lazy or eager, got '%s'", optarg);
			cfg->resume_mode = !strcmp(optarg, "lazy") ? "lazy" : "eager";
			break;
		case OPT_MAX_SB:
			cfg->max_sandboxes = (unsigned)parse_seconds("--max-sandboxes", optarg);
			break;
		case OPT_BOOT_TIMEOUT:
			cfg->boot_timeout = parse_seconds("--boot-timeout", optarg);
			break;
		case OPT_DEFAULT_TIMEOUT:
			cfg->default_timeout = (unsigned)parse_seconds("--default-timeout", optarg);
			break;
		case OPT_MAX_TIMEOUT:
			cfg->max_timeout = (unsigned)parse_seconds("--max-timeout", optarg);
			break;
		case OPT_RETAIN:
			cfg->retain_dead = (unsigned)parse_seconds("--retain", optarg);
			break;
		case OPT_MAX_UPLOAD:
			cfg->max_upload = parse_size("--max-upload", optarg);
			break;
		case OPT_DNS_SERVER:
			free(cfg->dns_servers);
			cfg->dns_servers = strdup(optarg);
			break;
		case OPT_MAX_CONNS:
			cfg->http.max_conns = (unsigned)parse_seconds("--max-conns", optarg);
			break;
		case OPT_EVENTS_KEEP:
			cfg->events_keep_s = parse_duration("--events-keep", optarg);
			break;
		case OPT_EVENTS_MAX:
			cfg->events_max = (unsigned long long)parse_seconds("--events-max", optarg);
			break;
		case OPT_SSE_MAX_BUF:
			cfg->sse_max_buf = parse_size("--sse-max-buffer", optarg);
			if (cfg->sse_max_buf > cfg->http.max_out / 2)
				die("--sse-max-buffer: at most %zu bytes", cfg->http.max_out / 2);
			break;
		case OPT_SSE_HEARTBEAT:
			cfg->sse_heartbeat = parse_seconds("--sse-heartbeat", optarg);
			break;
		case OPT_WEBHOOK:
			free(cfg->webhook_url);
			cfg->webhook_url = strdup(optarg);
			break;
		case OPT_WEBHOOK_SECRET:
			free(cfg->webhook_secret_file);
			cfg->webhook_secret_file = strdup(optarg);
			break;
		case OPT_WEBHOOK_RETRIES:
			if (!strcmp(optarg, "0"))
				cfg->webhook_retries = 0;
			else
				cfg->webhook_retries =
				    (unsigned)parse_seconds("--webhook-retries", optarg);
			if (cfg->webhook_retries > 20)
				die("--webhook-retries: at most 20");
			break;
		case OPT_WEBHOOK_BACKOFF:
			cfg->webhook_backoff = parse_seconds("--webhook-backoff", optarg);
			break;
		case OPT_CONSOLE_MAX:
			cfg->console_max = parse_size("--console-max", optarg);
			break;
		case OPT_METRICS_INTERVAL:
			cfg->metrics_interval = parse_seconds("--metrics-interval", optarg);
			if (cfg->metrics_interval < 1 || cfg->metrics_interval > 60)
				die("--metrics-interval: %s is not 1 to 60 seconds", optarg);
			break;
		case OPT_MAX_UNAUTH:
			cfg->http.max_untrusted =
			    (unsigned)parse_seconds("--max-unauth-conns", optarg);
			break;
		case OPT_UNAUTH_TIMEOUT:
			cfg->http.untrusted_idle = parse_seconds("--unauth-timeout", optarg);
			break;
		case OPT_HEADER_TIMEOUT:
			cfg->http.header_timeout = parse_seconds("--header-timeout", optarg);
			break;
		case OPT_IDLE_TIMEOUT:
			cfg->http.idle_timeout = parse_seconds("--idle-timeout", optarg);
			break;
		case OPT_BODY_TIMEOUT:
			cfg->http.body_timeout = parse_seconds("--body-timeout", optarg);
			break;
		case OPT_WRITE_TIMEOUT:
			cfg->http.write_timeout = parse_seconds("--write-timeout", optarg);
			break;
		case OPT_NO_JAIL:
			cfg->no_jail = true;
			break;
		case OPT_JAIL_UID_BASE:
			cfg->jail_uid_base = (unsigned)parse_seconds("--jail-uid-base", optarg);
			if (cfg->jail_uid_base < 1000 ||
			    cfg->jail_uid_base > 4000000000u - JAIL_SLOTS)
				die("--jail-uid-base: expected 1000..%u, got '%s'",
				    4000000000u - JAIL_SLOTS, optarg);
			break;
		case OPT_JAIL_MEM_MAX:
			cfg->jail_mem_max_mb = (unsigned)parse_seconds("--jail-mem-max-mb", optarg);
			if (cfg->jail_mem_max_mb < 16)
				die("--jail-mem-max-mb: expected at least 16, got '%s'", optarg);
			break;
		case 'v':
			kd_log_level = LOG_DEBUG;
			break;
		case 'V':
			printf("kilnd %s\n", KILN_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			/* getopt said what is wrong, on one line: keep it last */
			fprintf(stderr, "kilnd: 'kilnd --help' lists the options\n");
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr,
		        "kilnd: unexpected argument '%s' ('kilnd --help' lists the options)\n",
		        argv[optind]);
		exit(2);
	}
	if (cfg->default_timeout > cfg->max_timeout)
		die("--default-timeout is above --max-timeout");
	if (!cfg->webhook_url != !cfg->webhook_secret_file)
		die("--webhook and --webhook-secret go together (the secret signs every delivery)");
}

int main(int argc, char **argv)
{
	struct kilnd kd = {0};
	struct kilnd_cfg *cfg = &kd.cfg;
	ev_signal sigterm, sigint;
	char *db;
	int rc, lock_fd, unix_fd;

	cfg->max_sandboxes = 64;
	cfg->jail_uid_base = JAIL_UID_BASE_DEFAULT;
	cfg->boot_timeout = 10;
	cfg->default_timeout = 300;
	cfg->max_timeout = 86400;
	cfg->retain_dead = 3600;
	cfg->max_upload = 8ULL << 30;
	cfg->browser_port = CDP_DEFAULT_PORT;
	cfg->console_max = 4ULL << 20;
	cfg->metrics_interval = 10;
	cfg->events_keep_s = 7 * 86400;
	cfg->events_max = 100000;
	cfg->sse_max_buf = 1u << 20;
	cfg->sse_heartbeat = 15;
	cfg->webhook_retries = 5;
	cfg->webhook_backoff = 1;
	cfg->http = (struct http_cfg){
	    .max_conns = 1024,
	    .max_untrusted = 64,
	    .unix_reserve = 64,
	    .untrusted_idle = 5,
	    .header_timeout = 10,
	    .idle_timeout = 60,
	    .body_timeout = 30,
	    .write_timeout = 30,
	    .max_out = 8u << 20,
	};
	parse_args(cfg, argc, argv);
	if (cfg->http.unix_reserve > cfg->http.max_conns / 4)
		cfg->http.unix_reserve = cfg->http.max_conns / 4;
	if (cfg->http.max_untrusted > cfg->http.max_conns / 2)
		cfg->http.max_untrusted = cfg->http.max_conns / 2;
	if (!cfg->socket_path)
		cfg->socket_path = kiln_default_socket(cfg->data_dir);
	if (!cfg->data_dir)
		cfg->data_dir = kiln_default_data_dir();
	if (!cfg->vmm)
		cfg->vmm = beside_binary("kiln-vmm");
	if (!cfg->kernel)
		cfg->kernel = beside_binary("../guest/kiln-kernel");
	if (!cfg->initrd)
		cfg->initrd = beside_binary("../initramfs/agent.cpio");
	if (!cfg->browser_launcher)
		cfg->browser_launcher = strdup(CDP_DEFAULT_LAUNCHER);
	if (!cfg->images_dir)
		cfg->images_dir = beside_binary("../images");
	if (!cfg->image_initrd)
		cfg->image_initrd = beside_binary("../initramfs/agent-image.cpio");
	if (!cfg->resume_mode)
		cfg->resume_mode = "eager";
	if (!cfg->socket_path || !cfg->data_dir || !cfg->vmm || !cfg->kernel || !cfg->initrd ||
	    !cfg->images_dir || !cfg->image_initrd)
		die("out of memory");
	for (char **const *f = (char **const[]){&cfg->vmm, &cfg->kernel, &cfg->initrd,
	                                        &cfg->image_initrd, &cfg->images_dir, NULL};
	     *f; f++) {
		/* VMMs are started long after: do not depend on our cwd. */
		char *abs = realpath(**f, NULL);

		if (!abs) {
			log_warn("%s: %s (sandboxes cannot start until it exists)", **f,
			         strerror(errno));
			continue;
		}
		free(**f);
		**f = abs;
	}

	signal(SIGPIPE, SIG_IGN);
	umask(077);
	if (mkdir_p(cfg->data_dir, 0700))
		die("cannot create %s: %s", cfg->data_dir, strerror(errno));
	{
		/* VMMs run in their sandbox's directory and are handed paths under
		 * it (the pinned boot files): they must not depend on our cwd. */
		char *abs = realpath(cfg->data_dir, NULL);

		if (!abs)
			die("%s: %s", cfg->data_dir, strerror(errno));
		free(cfg->data_dir);
		cfg->data_dir = abs;
	}
	tighten_data_dir(cfg->data_dir);
	if (cfg->no_jail)
		log_warn("--no-jail: VMMs run without their jail (as kilnd's user, no namespaces, "
		         "cgroup or seccomp): for debugging only");
	else if (geteuid() != 0)
		log_warn("not root: VMMs run as kilnd's user, without namespaces of their own "
		         "(a user namespace where the host allows one) or a cgroup; seccomp "
		         "filters only. Run kilnd as root for the whole jail (README.md, \"The "
		         "jail\")");
	lock_fd = lock_data_dir(cfg->data_dir);
	if (asprintf(&kd.sandboxes_dir, "%s/sandboxes", cfg->data_dir) < 0 ||
	    asprintf(&db, "%s/kilnd.db", cfg->data_dir) < 0)
		die("out of memory");
	if (mkdir_p(kd.sandboxes_dir, 0700))
		die("cannot create %s: %s", kd.sandboxes_dir, strerror(errno));
	host_cpuid_publish(&kd);
	dir_pool_init(&kd);
	{
		char why[4400];

		if (run_root_init(&kd, cfg->run_dir, why, sizeof(why)))
			die("%s", why);
	}
	if (cfg->tcp_listen && !cfg->api_key)
		cfg->api_key = load_api_key(cfg->data_dir);
	rc = envd_load_secret(&kd);
	if (rc)
		die("cannot create %s/%s: %s", cfg->data_dir, ENVD_SECRET_FILE, strerror(-rc));

	kd.loop = ev_loop_new(EVFLAG_AUTO);
	if (!kd.loop)
		die("cannot create the event loop");
	rc = net_init(&kd, cfg->dns_servers);
	if (rc)
		die("cannot set up the sandboxes' resolver%s%s",
		    cfg->dns_servers ? ": --dns-server " : "",
		    cfg->dns_servers ? cfg->dns_servers : "");
	rc = store_open(&kd.store, db);
	if (rc)
		die("cannot open the state store %s", db);
	free(db);
	if (events_init(&kd))
		die("cannot set up the event log (see above)");
	if (console_init(&kd))
		die("inotify_init1: %s", strerror(errno));
	if (sb_restore_all(&kd))
		die("cannot load the state store");
	if (tmpl_load_all(&kd))
		die("cannot load the templates from the state store");
	if (auth_load(&kd))
		die("cannot load the API keys from the state store");
	{
		/* Snapshots of forks in progress when kilnd stopped: no clone
		 * needs them once it runs. */
		int rc = rm_tree(cfg->data_dir, "forks");

		if (rc)
			log_warn("cannot remove %s/forks: %s", cfg->data_dir, strerror(-rc));
	}
	bootfile_gc(&kd);

	kd.http = http_server_new(kd.loop, &cfg->http, api_route, &kd);
	if (!kd.http)
		die("out of memory");
	http_server_observe(kd.http, api_observe);
	unix_fd = listen_unix(cfg->socket_path);
	http_server_add_listener(kd.http, unix_fd, 0);
	if (cfg->tcp_listen)
		http_server_add_listener(kd.http, listen_tcp("--listen-tcp", cfg->tcp_listen),
		                         HTTP_LISTEN_TCP);
	if (cfg->envd_listen)
		http_server_add_listener(kd.http, listen_tcp("--envd-listen", cfg->envd_listen),
		                         HTTP_LISTEN_TCP | HTTP_LISTEN_ENVD);

	ev_signal_init(&sigterm, on_signal, SIGTERM);
	ev_signal_init(&sigint, on_signal, SIGINT);
	ev_signal_start(kd.loop, &sigterm);
	ev_signal_start(kd.loop, &sigint);
	ev_timer_init(&kd.housekeeping, on_housekeeping, HOUSEKEEPING_PERIOD, HOUSEKEEPING_PERIOD);
	kd.housekeeping.data = &kd;
	ev_timer_start(kd.loop, &kd.housekeeping);
	if (mhist_start(&kd, cfg->metrics_interval))
		die("out of memory");

	log_info("listening on %s%s%s%s%s (data %s, vmm %s, images %s, %s resumes)",
	         cfg->socket_path, cfg->tcp_listen ? " and tcp " : "",
	         cfg->tcp_listen ? cfg->tcp_listen : "", cfg->envd_listen ? ", envd on tcp " : "",
	         cfg->envd_listen ? cfg->envd_listen : "", cfg->data_dir, cfg->vmm, cfg->images_dir,
	         cfg->resume_mode);
	ev_run(kd.loop, 0);

	kd.stopping = true; /* the clients' commands are kept by the agents */
	http_server_free(kd.http);
	unlink(cfg->socket_path);
	mhist_free(&kd);
	sb_free_all(&kd);
	console_free(&kd);
	net_fini(&kd);
	tmpl_free_all(&kd);
	auth_free(&kd);
	bootfile_free_all(&kd);
	events_free(&kd);
	store_close(kd.store);
	ev_loop_destroy(kd.loop);
	close(lock_fd);
	free(kd.sandboxes_dir);
	free(kd.run_root);
	free(kd.host_cpuid_path);
	dir_pool_free(&kd);
	free(kd.envd_secret);
	cfg_free(cfg);
	return 0;
}
