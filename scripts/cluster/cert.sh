# Certificate helpers shared by scripts/dev-cluster.sh and the check scripts beside this file.
# not_after FILE: the certificate's NotAfter as the agent writes it (RFC 3339, milliseconds)
not_after() { date -u -d "$(openssl x509 -in "$1" -noout -enddate | cut -d= -f2)" +%Y-%m-%dT%H:%M:%S.000Z; }
