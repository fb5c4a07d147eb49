# "#!" scripts run by execve: interpreter, optional argument (one word with
# its inner spaces), scripts interpreted by scripts, and the limits.
d=$(mktemp -d)
cd "$d" || exit 1

run() {
	printf '#!/bin/sh\necho "plain: $0 $*"\n' >plain
	printf '#! /bin/sh -e \nfalse\necho "not reached"\n' >witharg
	printf '#!/bin/echo  two  words \n' >echoarg
	printf '#!plain\n' >nested # relative to the working directory
	printf '#!/nonexistent/interp\n' >missing
	printf '#!\n' >empty
	chmod +x plain witharg echoarg nested missing empty

	./plain a 'b c'
	./witharg
	echo "witharg status $?"
	./echoarg x y
	./nested p q
	./missing 2>/dev/null
	echo "missing status $?"
	./empty 2>/dev/null
	echo "empty status $?"

	# Five scripts in a chain run; a sixth is one too many.
	prev=$d/plain
	for i in 1 2 3 4 5; do
		printf '#!%s\n' "$prev" >"chain$i"
		chmod +x "chain$i"
		prev=$d/chain$i
	done
	./chain4 end
	echo "chain4 status $?"
	./chain5 end 2>/dev/null
	echo "chain5 status $?"
}

# The directory's name is random: print it as D.
run 2>&1 | sed "s|$d|D|g"

cd / && rm -rf "$d"
