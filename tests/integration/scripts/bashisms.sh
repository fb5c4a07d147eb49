# bash only: pipefail, here-strings, arrays, [[ ]], process substitution-free.
set -o pipefail
false | true; echo "pipefail status $?"
set +o pipefail
cat <<< "here string"
read -r x y <<< "alpha beta"; echo "$y-$x"
arr=(one two three); echo "${#arr[@]} ${arr[1]} ${arr[@]:1}"
declare -A m; m[k]=v; echo "${m[k]}"
[[ "abc" == a* ]] && echo "glob match"
[[ "abc" =~ ^a(b)c$ ]] && echo "regex ${BASH_REMATCH[1]}"
printf -v out '%05d' 42; echo "$out"
echo $(( 2**10 )) $(( 17 % 5 ))
s="Hello World"; echo "${s,,} ${s^^} ${s/World/kiln}"
