# Pipelines, redirections and exit statuses.
W=$(mktemp -d) && cd "$W" || exit 1
printf 'banana\napple\ncherry\napple\n' > fruit.txt
sort fruit.txt | uniq -c | sort -rn | head -2
cat fruit.txt | grep -v cherry | wc -l
echo "to stderr" 1>&2
ls /nonexistent 2>/dev/null || echo "ls failed: $?"
{ echo out; echo err 1>&2; } 2>&1 | sort
echo appended >> fruit.txt; tail -n 1 fruit.txt
cat < fruit.txt | tr a-z A-Z | head -n 1
exec 3> fd3.txt; echo "via fd 3" >&3; exec 3>&-; cat fd3.txt
true | false; echo "pipeline status $?"
false | true; echo "pipeline status $?"
(exit 7); echo "subshell status $?"
x=$(echo inner | tr a-z A-Z); echo "substituted $x"
echo "nested $(echo $(echo deep))"
rm fruit.txt fd3.txt
