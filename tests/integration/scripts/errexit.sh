# set -e and friends.
set -e
echo start
if false; then echo no; else echo "else branch"; fi
false || echo "or list"
f() { return 3; }
f || echo "function returned $?"
( set -e; false; echo "not printed" ) || echo "subshell failed: $?"
sh -c 'set -e; false; echo unreachable'; echo "exit $?" || true
set +e
false
echo "after set +e: $?"
