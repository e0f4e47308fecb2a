# The snowmint service as a container image: one static binary (musl) in an empty image.
#
#   docker build -t snowmint .
#   docker run -d -p 8080:8080 -p 50051:50051 -p 8081:8081 -v snowmint-state:/var/lib/snowmint snowmint
#
# It listens on 0.0.0.0:8080 (HTTP), 0.0.0.0:50051 (gRPC) and 0.0.0.0:8081 (admin: the
# probes and the metrics, on connections of their own), keeps its high-water mark in
# the volume /var/lib/snowmint, runs as user 65532 (any other --user works too), and stops
# on SIGTERM after draining, with exit status 0. Arguments after the image name replace
# `serve`: `docker run --rm snowmint gen -n 3`, `... serve --worker 3`.
#
# BUILDER is any Debian-based image with Rust (rustup's official images are); the build
# installs musl-tools and the musl target when the image lacks them. scripts/image builds
# this same file on machines without a registry, with a builder image it makes itself.
# The legacy builder (no BuildKit) builds it too.

ARG BUILDER=rust:1.95-bookworm

FROM ${BUILDER} AS build
# scripts/image removes this stage's image after a build by this label.
LABEL snowmint.stage=build
ARG TARGET=x86_64-unknown-linux-musl
# The commit `snowmint --version` names: the context has no .git to ask.
ARG REVISION=unknown
RUN set -eu; \
    if ! command -v musl-gcc >/dev/null; then \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends musl-tools; \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    if [ ! -d "$(rustc --print sysroot)/lib/rustlib/$TARGET" ]; then rustup target add "$TARGET"; fi
WORKDIR /src
COPY . .
# Stripped: 2 MB less. musl's allocator serves /v1/id as fast as glibc's here
# (docs/OPERATIONS.md, "The container image").
RUN CARGO_PROFILE_RELEASE_STRIP=true SNOWMINT_COMMIT="$REVISION" \
    cargo build --release --locked --target "$TARGET" -p snowmint-cli \
 && mkdir -p /out/etc/ssl/certs /out/var/lib/snowmint /out/tmp \
 && cp "target/$TARGET/release/snowmint" /out/snowmint \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nsnowmint:x:65532:65532:snowmint:/var/lib/snowmint:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nsnowmint:x:65532:\n' > /out/etc/group \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ \
 && chown 65532:65532 /out/var/lib/snowmint \
 && chmod 1777 /out/var/lib/snowmint /out/tmp

FROM scratch
ARG VERSION=unknown
ARG REVISION=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="snowmint" \
      org.opencontainers.image.description="64-bit, time-sorted, unique ids over HTTP/JSON, gRPC and Thrift" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /out/ /
# The state directory is world-writable with the sticky bit, as /tmp is, so that a
# container run with any --user keeps its marks in a fresh volume; the default user owns it.
ENV SNOWMINT_HTTP_ADDR=0.0.0.0:8080 \
    SNOWMINT_GRPC_ADDR=0.0.0.0:50051 \
    SNOWMINT_ADMIN_ADDR=0.0.0.0:8081 \
    SNOWMINT_STATE_DIR=/var/lib/snowmint
VOLUME ["/var/lib/snowmint"]
EXPOSE 8080 50051 8081
USER 65532:65532
STOPSIGNAL SIGTERM
ENTRYPOINT ["/snowmint"]
CMD ["serve"]
