#!/bin/sh
# Which system calls each kind of kiln-vmm thread makes once its seccomp
# filter is on: the lists of vmm/jail/jail_seccomp.c are checked with this.
#
#   sh tools/jail/seccomp_profile.sh wrap DIR   prints a kiln-vmm wrapper
#       that runs the real one under strace -ff into DIR; give it as KILN_VMM
#       (tests/integration/run.sh) or --vmm (kilnd), run the tests, then
#   sh tools/jail/seccomp_profile.sh report DIR
#       prints, per thread kind, the calls seen after that thread loaded
#       its filter (threads a filtered thread started count for its kind),
#       and those not on the kind's list (tools/jail/lists.txt is written
#       from the source for the comparison).
set -eu
cd "$(dirname "$0")/../.."
case ${1:-} in
wrap)
	dir=$(realpath "$2")
	mkdir -p "$dir"
	w=$dir/kiln-vmm
	cat >"$w" <<W
#!/bin/sh
exec strace -qq -f -ff -ttt -s 64 -o $dir/t.\$\$ $PWD/build/bin/kiln-vmm "\$@"
W
	chmod +x "$w"
	echo "$w"
	;;
report)
	python3 - "$2" vmm/jail/jail_seccomp.c <<'PY'
import collections, glob, os, re, sys
d, src = sys.argv[1], open(sys.argv[2]).read()
# the lists as written in the source
common = re.findall(r'"(\w+)"', re.search(r'#define COMMON(.*?)\n\n', src, re.S).group(1))
lists = {}
for var, name in [("main_calls", "kiln-vmm"), ("vcpu_calls", "kiln-vcpu"), ("blk_calls", "kiln-blk"),
                  ("uffd_calls", "kiln-uffd"), ("loader_calls", "kiln-load"), ("outer_calls", "kiln-jail")]:
    body = re.search(var + r'\[\] = \{(.*?)\};', src, re.S).group(1)
    lists[name] = set(re.findall(r'"(\w+)"', body)) | (set(common) if "COMMON" in body else set())
    if name != "kiln-jail":
        lists[name] |= {"mmap", "mprotect", "clone", "clone3"}
lists["kiln-vmm"].add("socket")
seen = collections.defaultdict(collections.Counter)
LINE = re.compile(r'([0-9.]+) (\w+)\(')
runs = collections.defaultdict(list)  # one run of kiln-vmm: its threads' files
for f in glob.glob(os.path.join(d, "t.*.*")):
    runs[f.split(".")[-2]].append(f)
for files in runs.values():
    threads, t_main = [], None
    for f in files:
        text = open(f, errors="replace").read()
        calls = [(float(m.group(1)), m.group(2), l) for l in text.splitlines()
                 for m in [LINE.match(l)] if m]
        names = re.findall(r'PR_SET_NAME, "(kiln-[a-z]+)"', text)
        kind = names[0] if names else ("kiln-jail" if "unshare(CLONE_NEWPID" in text
                                       else "kiln-vmm" if "pivot_root" in text else None)
        loads = [t for t, c, l in calls if c == "seccomp" and "SET_MODE_FILTER" in l]
        t_on = loads[-1] if loads else None
        if kind == "kiln-vmm" and t_on is not None:
            t_main = t_on
        threads.append((kind, t_on, calls))
    for kind, t_on, calls in threads:
        if t_on is None and kind is None and t_main is not None:
            kind, t_on = "kiln-vmm", t_main  # a worker main started: main's filter
        if t_on is None:
            continue
        for t, c, l in calls:
            if t > t_on:
                seen[kind or "?"][c] += 1
for k in sorted(seen):
    extra = sorted(set(seen[k]) - lists.get(k, set()))
    unused = sorted(lists.get(k, set()) - set(seen[k]))
    print("%s: %d calls seen: %s" % (k, len(seen[k]), " ".join(sorted(seen[k]))))
    print("  not on its list: %s" % (" ".join(extra) or "none"))
    print("  on its list, not seen: %s" % (" ".join(unused) or "none"))
PY
	;;
*)
	sed -n '2,14p' "$0"
	exit 2
	;;
esac
