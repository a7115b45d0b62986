# The BIRD 2 router of the labs (dual-tor's tor2b): Debian's bird2 on the podroute base. Built by
# containerlab/build-images.sh with the host's network, for apt.
ARG BASE=podroute/base:latest
FROM ${BASE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends bird2 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY bird-entrypoint.sh /usr/local/bin/bird-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/bird-entrypoint.sh"]
