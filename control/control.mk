# kilnd: the control plane. Included from the top-level Makefile.
# Debian packages: libev-dev libhttp-parser-dev libjansson-dev
# libsqlite3-dev nettle-dev (see mk/deps.sh).

KILND_SRCS := $(wildcard control/*.c)
KILND_OBJS := $(KILND_SRCS:%.c=$(BUILD)/host/%.o)

$(BIN)/kilnd: $(KILND_OBJS)
	@mkdir -p $(dir $@)
	$(V)$(CC) -o $@ $^ -lev -lhttp_parser -ljansson -lsqlite3 -lnettle

all: $(BIN)/kilnd
