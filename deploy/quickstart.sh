#!/usr/bin/env bash
# From a fresh Debian 12 machine to a running gateway on an embedded DuckDB
# with demo data: installs, builds, serves deploy/examples/quickstart.yaml.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/install-deps.sh"
"$root/deploy/build.sh" queryflux
cat <<'MSG'

QueryFlux is starting: PostgreSQL wire on :5432, MySQL wire on :3306,
Trino HTTP on :8080, admin API and metrics on :9000. Try it from another
terminal:

  psql -h 127.0.0.1 -p 5432 -U me demo -c 'SELECT city, count(*) FROM customers GROUP BY 1'
  mariadb -h127.0.0.1 -P3306 -ume demo -e 'SELECT name, price FROM products ORDER BY price'

  curl -s -H 'X-Trino-User: me' --data 'SELECT city, count(*) FROM customers GROUP BY 1' \
    http://127.0.0.1:8080/v1/statement          # then GET the nextUri it returns

  node -e "const {Trino,BasicAuth}=require('trino-client');(async()=>{const t=Trino.create({server:'http://127.0.0.1:8080',catalog:'demo',schema:'main',auth:new BasicAuth('me')});
    for await (const r of await t.query('SELECT c.city, sum(p.price*o.quantity) AS revenue FROM orders o JOIN customers c ON c.id=o.customer_id JOIN products p ON p.id=o.product_id GROUP BY 1 ORDER BY 2 DESC')) console.table(r.data)})()"
    # (npm install trino-client first, or run it from tests/e2e)

Demo tables: customers, products, orders. Metrics: http://127.0.0.1:9000/metrics
History: curl -u admin:admin http://127.0.0.1:9000/admin/queries
Stop with Ctrl-C: running queries finish first.

MSG
exec "$root/build/queryflux" serve --config "$root/deploy/examples/quickstart.yaml"
