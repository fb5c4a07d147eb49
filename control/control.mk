# kilnd: the control plane. Included from the top-level Makefile.
# Debian packages: libev-dev libhttp-parser-dev libjansson-dev
# libsqlite3-dev nettle-dev libc-ares-dev (see mk/deps.sh).

KILND_SRCS := $(wildcard control/*.c control/*/*.c)
KILND_OBJS := $(KILND_SRCS:%.c=$(BUILD)/host/%.o)

# libkilnsnap: a pause's snapshot is told from the older generation it
# was appended to by reading the file (sandbox/pause_base.c).
KILND_LDLIBS := -lev -lhttp_parser -ljansson -lsqlite3 -lnettle -lcares $(SNAP_LDLIBS)

$(BIN)/kilnd: $(KILND_OBJS) $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(V)$(CC) -o $@ $^ $(KILND_LDLIBS)

# Subsystems include each other by folder: "http/http.h", "sandbox/sandbox.h".
$(BUILD)/host/control/%.o: HOST_CFLAGS += -iquote control

all: $(BIN)/kilnd

# The code interpreter's Python kernel, embedded in kilnd as a C string.
CODEINT_KERNEL_H := $(BUILD)/host/control/gen/codeint_kernel.h
$(CODEINT_KERNEL_H): control/envd/codeint_kernel.py control/control.mk
	@mkdir -p $(dir $@)
	$(V){ echo '/* generated from control/envd/codeint_kernel.py */'; \
	  echo 'static const char codeint_kernel_py[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $<; \
	  echo '    ;'; } >$@.tmp && mv $@.tmp $@
$(BUILD)/host/control/envd/codeint.o: $(CODEINT_KERNEL_H)
$(BUILD)/host/control/envd/codeint.o: HOST_CFLAGS += -I$(BUILD)/host/control/gen

# kilnd with ASan and UBSan: make test runs the e2e suite against it once.
KILND_SAN := $(BUILD)/san/bin/kilnd
KILND_SAN_OBJS := $(KILND_SRCS:%.c=$(BUILD)/san/%.o)
$(BUILD)/san/control/%.o: control/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(HOST_CFLAGS) -iquote control -O1 $(SAN_FLAGS) -c $< -o $@
$(BUILD)/san/control/envd/codeint.o: $(CODEINT_KERNEL_H)
$(BUILD)/san/control/envd/codeint.o: HOST_CFLAGS += -I$(BUILD)/host/control/gen
$(KILND_SAN): $(KILND_SAN_OBJS) $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(SAN_FLAGS) -o $@ $^ $(KILND_LDLIBS)

# The web console (control/webui): the page's own files and xterm.js with
# its fit addon, installed with npm (the versions control/webui/web's
# package-lock.json pins) into build/webui and embedded in kilnd with
# .incbin (webui_assets.c).
WEBUI_WEB := control/webui/web
WEBUI_NPM := $(BUILD)/webui/node_modules
WEBUI_NPM_STAMP := $(BUILD)/webui/.installed
WEBUI_FILES := $(wildcard $(WEBUI_WEB)/*.html $(WEBUI_WEB)/*.js $(WEBUI_WEB)/*.css) \
	$(WEBUI_NPM_STAMP)
$(WEBUI_NPM_STAMP): $(WEBUI_WEB)/package.json $(WEBUI_WEB)/package-lock.json | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)cp $^ $(dir $@)
	$(V)cd $(dir $@) && npm ci --no-audit --no-fund --loglevel=error >/dev/null || \
		{ echo "kilnd: npm ci of the console's xterm.js failed (npm needs the npm registry)"; exit 1; }
	$(V)touch $@
WEBUI_ASSET_FLAGS = -DWEBUI_SRC='"$(WEBUI_WEB)"' -DWEBUI_NPM='"$(WEBUI_NPM)"'
$(BUILD)/host/control/webui/webui_assets.o $(BUILD)/san/control/webui/webui_assets.o: $(WEBUI_FILES)
$(BUILD)/host/control/webui/webui_assets.o $(BUILD)/san/control/webui/webui_assets.o: \
	HOST_CFLAGS += $(WEBUI_ASSET_FLAGS)
