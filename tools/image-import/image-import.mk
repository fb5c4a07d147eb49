# kiln-image-import: container image archives into kiln images. Included
# from the top-level Makefile. Debian: libarchive-dev, libjansson-dev,
# nettle-dev; erofs-utils at run time.
IMPORT_SRCS := $(wildcard tools/image-import/*.c)
IMPORT_OBJS := $(IMPORT_SRCS:%.c=$(BUILD)/host/%.o)

$(BIN)/kiln-image-import: $(IMPORT_OBJS)
	@mkdir -p $(dir $@)
	$(V)$(CC) -o $@ $^ -larchive -ljansson -lnettle

all: $(BIN)/kiln-image-import
