# Here-documents, quoting and expansion.
name=kiln
cat <<END
hello $name
  indented line
\$escaped and $(echo substituted)
END
cat <<'END'
no $expansion here
END
cat <<-END
	tabs stripped
	END
read a b <<END
first second
END
echo "$b $a"
set -- one "two three" four
for arg in "$@"; do echo "[$arg]"; done
echo "count $#"
v="a  b"; echo $v; echo "$v"
echo ${undefined:-default} ${name:+set} ${#name}
