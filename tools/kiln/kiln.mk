# kiln: the command-line client of kilnd. Included from the top-level
# Makefile (after snapshot/snapshot.mk). Shares the buffer, WebSocket and
# small helpers with kilnd, and the snapshot inspector (kiln snapshot) with
# kiln-snapshot: tools/snapshot/inspect.c built without its main(), over
# the snapshot library.

KILN_CLI_SRCS := $(wildcard tools/kiln/*.c) control/http/buf.c control/util.c control/http/ws.c
KILN_CLI_OBJS := $(KILN_CLI_SRCS:%.c=$(BUILD)/host/%.o) $(BUILD)/host/tools/kiln/snap-inspect.o

$(BUILD)/host/tools/kiln/%.o: HOST_CFLAGS += -Icontrol

$(BUILD)/host/tools/kiln/snap-inspect.o: tools/snapshot/inspect.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(HOST_CFLAGS) -DSNAP_INSPECT_NO_MAIN -c $< -o $@

$(BIN)/kiln: $(KILN_CLI_OBJS) $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(V)$(CC) -o $@ $^ -lhttp_parser -ljansson -lnettle $(SNAP_LDLIBS)

all: $(BIN)/kiln
