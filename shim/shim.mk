# containerd-shim-kiln-v2: containerd's runtime shim v2 for kiln (shim/).
# Included from the top-level Makefile. Debian: protobuf-c-compiler,
# libprotobuf-c-dev (the .proto files in shim/proto are compiled with
# protoc-c), libjansson-dev, nettle-dev, libarchive-dev (a pod container's
# root sent into its VM as a tar stream); the agent protocol codec is
# kilnd's (control/agent/agent_proto.c), as are the port streams that carry
# inbound connections (agent_client.c, agent_port.c; shim/net_in.c), the jailed VMM is started as
# kilnd starts it (control/sandbox/vmm_clone.c), and the guest's egress and
# DNS are kilnd's code (control/net/net_lib.mk; libev-dev, libc-ares-dev).
SHIM_PROTOS := $(wildcard shim/proto/*.proto)
SHIM_GEN := $(BUILD)/host/shim/gen
SHIM_GEN_SRCS := $(SHIM_PROTOS:shim/proto/%.proto=$(SHIM_GEN)/%.pb-c.c)
SHIM_SRCS := $(wildcard shim/*.c) control/agent/agent_proto.c control/agent/agent_client.c \
	control/agent/agent_port.c control/http/buf.c \
	control/sandbox/vmm_clone.c control/util.c $(NET_LIB_SRCS)
SHIM_OBJS := $(SHIM_SRCS:%.c=$(BUILD)/host/%.o) $(SHIM_GEN_SRCS:%.c=%.o)

$(SHIM_GEN)/stamp: $(SHIM_PROTOS) | $(DEPS_STAMP)
	@mkdir -p $(SHIM_GEN)
	$(V)protoc-c --c_out=$(SHIM_GEN) -Ishim/proto $(SHIM_PROTOS)
	@touch $@
$(SHIM_GEN_SRCS): $(SHIM_GEN)/stamp

$(SHIM_GEN)/%.pb-c.o: $(SHIM_GEN)/stamp
	$(V)$(CC) $(HOST_CFLAGS) -I$(SHIM_GEN) -c $(@:.o=.c) -o $@

$(BUILD)/host/shim/%.o: HOST_CFLAGS += -I$(BUILD)/host/shim -I$(SHIM_GEN) -iquote control
$(patsubst %.c,$(BUILD)/host/%.o,$(wildcard shim/*.c)): $(SHIM_GEN)/stamp

$(BIN)/containerd-shim-kiln-v2: $(SHIM_OBJS)
	@mkdir -p $(dir $@)
	$(V)$(CC) -o $@ $^ -lprotobuf-c -ljansson -lnettle -larchive -lev -lcares -lpthread

all: $(BIN)/containerd-shim-kiln-v2
