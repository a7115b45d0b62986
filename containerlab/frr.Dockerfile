# The FRR router of the labs (tor, crosssubnet): Debian's FRR on the podroute base. Built by
# containerlab/build-images.sh with the host's network, for apt.
ARG BASE=podroute/base:latest
FROM ${BASE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends frr \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
# zebra and bgpd on, as containerlab/daemons says; a topology may bind its own over it.
COPY daemons /etc/frr/daemons
COPY frr-entrypoint.sh /usr/local/bin/frr-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/frr-entrypoint.sh"]
