# Background jobs, wait, traps, signals.
W=$(mktemp -d) && cd "$W" || exit 1
(sleep 0.2; echo slow) &
echo fast
wait
echo "after wait"
( echo child; exit 3 ) &
wait $!
echo "child status $?"
trap 'echo got TERM' TERM
kill -TERM $$
echo "after kill"
trap 'echo cleanup on exit' EXIT
sh -c 'kill -INT $$'; echo "sh killed by INT: $?"
sh -c 'trap "echo trapped INT; exit 9" INT; kill -INT $$; echo not reached'; echo "status $?"
( for i in 1 2 3; do (echo "job $i") & done; wait ) | sort
echo done
