# The guest networking both kilnd and containerd-shim-kiln-v2 link
# (control/net/net_lib.c says what each side supplies): the egress relay,
# DNS answers through c-ares, the UDP relay and the policy. kilnd's own
# glue (net.c: its sandboxes, pins.c: its store) is not in it.
# Debian: libev-dev, libc-ares-dev.
NET_LIB_SRCS := $(addprefix control/net/,net_lib.c egress.c relay.c dns.c dns_msg.c resolver.c \
	udp.c udp_frame.c policy.c)
