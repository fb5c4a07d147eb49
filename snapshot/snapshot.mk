# libkilnsnap (the snapshot library) and kiln-snapshot (the inspector).
# Included from the top-level Makefile; kiln-vmm links $(SNAP_LIB) $(SNAP_LDLIBS).

SNAP_SRCS   := $(wildcard snapshot/*.c)
SNAP_OBJS   := $(SNAP_SRCS:%.c=$(BUILD)/host/%.o)
SNAP_LIB    := $(BUILD)/lib/libkilnsnap.a
SNAP_LDLIBS := -lzstd -lpthread

$(SNAP_LIB): $(SNAP_OBJS)
	@mkdir -p $(dir $@)
	$(V)rm -f $@ && ar rcs $@ $^

$(BIN)/kiln-snapshot: $(BUILD)/host/tools/snapshot/inspect.o $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(V)$(CC) -o $@ $^ $(SNAP_LDLIBS)

# Benchmark (make bench runs it through tools/bench/bench.sh when wired there).
$(BIN)/snapbench: $(BUILD)/host/tools/bench/snapbench.o $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(V)$(CC) -o $@ $^ $(SNAP_LDLIBS)

all: $(SNAP_LIB) $(BIN)/kiln-snapshot
