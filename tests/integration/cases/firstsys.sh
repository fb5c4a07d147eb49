# The first run of syscall sites, served before the site is rewritten (on
# PVM hosts at CPL3 through LSTAR, without the supervisor): the program's red
# zone, registers and flags survive, in threads, fork and vfork children,
# with signals and restarts, and in code the program writes itself. Sourced
# by run.sh.
for m in sites thread fork vfork signal restart timer jit; do
	expect_same "firstsys-$m" -- /bin/firstsys "$m"
done
