# kiln: the command-line client of kilnd. Included from the top-level
# Makefile. Shares the buffer, WebSocket and small helpers with kilnd.

KILN_CLI_SRCS := $(wildcard tools/kiln/*.c) control/buf.c control/util.c control/ws.c
KILN_CLI_OBJS := $(KILN_CLI_SRCS:%.c=$(BUILD)/host/%.o)

$(BUILD)/host/tools/kiln/%.o: HOST_CFLAGS += -Icontrol

$(BIN)/kiln: $(KILN_CLI_OBJS)
	@mkdir -p $(dir $@)
	$(V)$(CC) -o $@ $^ -lhttp_parser -ljansson -lnettle

all: $(BIN)/kiln
