/* SPDX-License-Identifier: MIT */
/*
 * virtio-pmem (device 27): where the image is. The VMM maps the image file
 * read-only at KILN_GPA_PMEM and names the window in the device tree
 * (kiln,pmem-start/-size/-image-size, see kiln/boot.h); the device's
 * configuration space {le64 start; le64 size} says the same and is read
 * only when the device tree does not. The window is read in place through
 * the direct map: no request ever goes to the device (its only request,
 * FLUSH, means nothing for a read-only image).
 */
#include "bootinfo.h"
#include "mm.h"
#include "virtio.h"
#include "vpmem.h"

#define VIRTIO_ID_PMEM 27
#define HUGE_2M        (2ULL << 20)

static bool has_device(const struct bootinfo *bi)
{
	for (int i = 0; i < bi->nr_virtio; i++)
		if (bi->virtio[i].device_id == VIRTIO_ID_PMEM)
			return true;
	return false;
}

/* Without the device-tree properties: ask the device (4 MMIO reads). */
static int window_from_device(const struct bootinfo *bi, uint64_t *start, uint64_t *size)
{
	struct vio_dev dev;
	struct vio_queue q;
	int err = vio_probe(bi, VIRTIO_ID_PMEM, 0, 1, 8, &dev, &q);

	if (err)
		return err;
	*start = vio_config_read(&dev, 0) | (uint64_t)vio_config_read(&dev, 4) << 32;
	*size = vio_config_read(&dev, 8) | (uint64_t)vio_config_read(&dev, 12) << 32;
	return 0;
}

int vpmem_image(const struct bootinfo *bi, const void **img, uint64_t *len, const char **why)
{
	uint64_t start = bi->pmem_start, size = bi->pmem_size, image = bi->pmem_image_size;

	if (!has_device(bi))
		return -ENODEV;
	if (!size) {
		if (window_from_device(bi, &start, &size)) {
			*why = "the virtio-pmem device does not respond";
			return -EIO;
		}
		image = size;
	}
	/* Only this window is in the direct map (the VMM maps it there). */
	if (start != KILN_GPA_PMEM || !size || size > KILN_PMEM_MAX || size % HUGE_2M || !image ||
	    image > size) {
		*why = "the virtio-pmem window is not where kiln/boot.h puts it";
		return -EINVAL;
	}
	*img = phys_to_virt(start);
	*len = image;
	return 0;
}
