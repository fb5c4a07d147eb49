/* SPDX-License-Identifier: MIT */
/*
 * The network interface ioctls any socket takes (Linux's dev_ioctl): they
 * describe the one interface there is, "lo", 127.0.0.1/8.
 */
#include "errno_k.h"
#include "sockpair.h"
#include "uaccess.h"

#define SIOCGIFNAME    0x8910
#define SIOCGIFCONF    0x8912
#define SIOCGIFFLAGS   0x8913
#define SIOCGIFADDR    0x8915
#define SIOCGIFNETMASK 0x891b
#define SIOCGIFMTU     0x8921
#define SIOCGIFHWADDR  0x8927
#define SIOCGIFINDEX   0x8933

#define IFNAMSIZ        16
#define LO_FLAGS        0x49 /* IFF_UP | IFF_LOOPBACK | IFF_RUNNING */
#define LO_MTU          65536
#define ARPHRD_LOOPBACK 772

struct ifreq_k {
	char name[IFNAMSIZ];
	union {
		struct {
			uint16_t family;
			uint8_t data[14];
		} addr;
		short flags;
		int ivalue;
		uint8_t pad[24];
	};
};

struct ifconf_k {
	int len;
	int pad;
	struct ifreq_k *req;
};

static void lo_addr(struct ifreq_k *r, int cmd)
{
	static const uint8_t addr[4] = {127, 0, 0, 1}, mask[4] = {255, 0, 0, 0};

	memset(&r->addr, 0, sizeof(r->addr));
	r->addr.family = AF_INET;
	memcpy(r->addr.data + 2, cmd == SIOCGIFNETMASK ? mask : addr, 4);
}

static long ifconf(unsigned long arg)
{
	struct ifconf_k c;
	struct ifreq_k r = {.name = "lo"};

	if (copy_from_user(&c, (void *)arg, sizeof(c)))
		return -EFAULT;
	if (c.req && c.len >= (int)sizeof(r)) {
		lo_addr(&r, SIOCGIFADDR);
		if (copy_to_user(c.req, &r, sizeof(r)))
			return -EFAULT;
		c.len = sizeof(r);
	} else if (c.req) {
		c.len = 0;
	} else {
		c.len = sizeof(r); /* the size needed */
	}
	return copy_to_user((void *)arg, &c, sizeof(c));
}

static long ifreq(unsigned int cmd, unsigned long arg)
{
	struct ifreq_k r;

	if (copy_from_user(&r, (void *)arg, sizeof(r)))
		return -EFAULT;
	if (cmd == SIOCGIFNAME) {
		if (r.ivalue != 1)
			return -ENODEV;
		memset(r.name, 0, sizeof(r.name));
		memcpy(r.name, "lo", 2);
		return copy_to_user((void *)arg, &r, sizeof(r));
	}
	r.name[IFNAMSIZ - 1] = 0;
	if (strcmp(r.name, "lo"))
		return -ENODEV;
	switch (cmd) {
	case SIOCGIFFLAGS:
		r.flags = LO_FLAGS;
		break;
	case SIOCGIFADDR:
	case SIOCGIFNETMASK:
		lo_addr(&r, (int)cmd);
		break;
	case SIOCGIFMTU:
		r.ivalue = LO_MTU;
		break;
	case SIOCGIFINDEX:
		r.ivalue = 1;
		break;
	case SIOCGIFHWADDR:
		memset(&r.addr, 0, sizeof(r.addr));
		r.addr.family = ARPHRD_LOOPBACK;
		break;
	}
	return copy_to_user((void *)arg, &r, sizeof(r));
}

long netdev_ioctl(unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case SIOCGIFCONF:
		return ifconf(arg);
	case SIOCGIFNAME:
	case SIOCGIFFLAGS:
	case SIOCGIFADDR:
	case SIOCGIFNETMASK:
	case SIOCGIFMTU:
	case SIOCGIFINDEX:
	case SIOCGIFHWADDR:
		return ifreq(cmd, arg);
	}
	return -ENOTTY;
}
