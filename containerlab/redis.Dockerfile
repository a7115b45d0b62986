# The datastore node of the labs: Debian's redis-server on the podroute base. Built by
# containerlab/build-images.sh with the host's network, for apt.
ARG BASE=podroute/base:latest
FROM ${BASE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
EXPOSE 6379
# Agents reach it over the lab's network: every address, no protected mode, nothing on disk.
CMD ["redis-server", "--bind", "* -::*", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
