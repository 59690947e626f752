# The queryflux binary on Debian 12: one image for every role (standalone,
# controlPlane, worker), the config mounted at /etc/queryflux/config.yaml.
#   docker build -t queryflux .
#   docker run -v $PWD/deploy/examples/quickstart.yaml:/etc/queryflux/config.yaml \
#     -p 8080:8080 -p 9000:9000 queryflux
FROM debian:12 AS build
COPY . /src
WORKDIR /src
RUN QF_DEPS=build deploy/install-deps.sh \
 && cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DQF_ENABLE_TESTS=OFF \
 && ninja -C /build queryflux

FROM debian:12-slim
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates libcaf-core0.17 libfmt9 libmariadb3 libpq5 libpqxx-6.4 \
      libprometheus-cpp-core1.0 libre2-9 libspdlog1.10 libsqlite3-0 libssl3 \
      libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/queryflux --create-home queryflux
# The binary finds DuckDB where the build found it (its RPATH).
COPY --from=build /opt/duckdb-1.4.4/lib/libduckdb.so /opt/duckdb-1.4.4/lib/libduckdb.so
COPY --from=build /build/queryflux /usr/local/bin/queryflux
USER 10001
WORKDIR /var/lib/queryflux
EXPOSE 8080 5432 3306 9000
ENTRYPOINT ["/usr/local/bin/queryflux"]
CMD ["serve", "--config", "/etc/queryflux/config.yaml"]
