# Files, find, xargs, sort, uniq, awk, sed.
W=$(mktemp -d) && cd "$W" && mkdir -p tree/a/b tree/c || exit 1
for f in tree/a/one tree/a/b/two tree/c/three tree/four; do echo "content of $f" > "$f"; done
find tree -type f | sort
find tree -type f -name 't*' | sort | xargs cat
find tree -type d | sort | xargs -n 1 basename
awk '{ n += length($0) } END { print "chars", n }' tree/a/one tree/c/three
printf '3 c\n1 a\n2 b\n1 a\n' | sort -n | uniq | awk '{ print $2 "=" $1 }'
sed -e 's/content/CONTENT/' -e 's/of //' tree/four
printf 'x,y,z\n1,2,3\n' | cut -d, -f2
echo "a:b:c" | awk -F: '{ print $3 $2 $1 }'
for f in tree/a/*; do [ -f "$f" ] && echo "file $f" || echo "dir $f"; done
wc -l tree/a/one tree/four | tail -1
rm -rf tree
echo ok
