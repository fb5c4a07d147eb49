# kiln-agent: the guest's PID 1 (initramfs/agent/*.c), included from the
# top-level Makefile.
#
#   $(BUILD)/initramfs/kiln-agent        static musl binary for the guest
#   $(BUILD)/tests/agent/kiln-agent-host the same sources for the host, with
#                                        ASan+UBSan, for the host-side test
#   make agent-test                      runs tests/integration/agent_host_test.sh
#                                        against both (unix-socket mode, no VM)

AGENT_SRCS   := $(wildcard initramfs/agent/*.c)
AGENT_HDRS   := $(wildcard initramfs/agent/*.h) include/kiln/agent.h
AGENT_CC     := musl-gcc
AGENT_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude -D_GNU_SOURCE
AGENT_BIN    := $(BUILD)/initramfs/kiln-agent
AGENT_HOST   := $(BUILD)/tests/agent/kiln-agent-host

.PHONY: agent agent-test
agent: $(AGENT_BIN)

$(AGENT_BIN): $(AGENT_SRCS) $(AGENT_HDRS) initramfs/agent/agent.mk | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(AGENT_CC) -static -O2 -s $(AGENT_CFLAGS) -o $@ $(AGENT_SRCS)

$(AGENT_HOST): $(AGENT_SRCS) $(AGENT_HDRS) initramfs/agent/agent.mk | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
		-fno-sanitize-recover=all $(AGENT_CFLAGS) -o $@ $(AGENT_SRCS)

agent-test: $(AGENT_BIN) $(AGENT_HOST)
	$(V)sh tests/integration/agent_host_test.sh $(AGENT_HOST) $(AGENT_BIN)
