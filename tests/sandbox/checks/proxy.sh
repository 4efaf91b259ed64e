# --allow-host's proxy (issue 27), sourced by tests/sandbox/test-sandbox: in a
# network and mount namespace made here, with its own /etc/hosts and
# /etc/resolv.conf bound over the host's (in that namespace only), a DNS
# server of the test's (dns-server.py) and HTTP servers on loopback.

# 7bdf3ce's NO_PROXY listed localhost: with --allow-host localhost:PORT
# --allow-host-loopback, curl went straight to the sandbox's empty loopback.
cat >"$WORK/proxy-lo.sh" <<'CHECK'
#!/bin/bash
husk=$1; shift
busybox ip link set lo up
busybox httpd -f -p 127.0.0.1:8080 -h "$WORK/www" & a=$!
for _ in $(seq 50); do bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080' 2>/dev/null && break; sleep 0.1; done
cd "$HOME_DIR/proj" || exit 1
"$@" "$husk" sandbox --allow-host localhost:8080 --allow-host-loopback -- \
  sh -c 'echo "NO_PROXY=$NO_PROXY"; curl -sS --max-time 20 http://localhost:8080/ 2>&1'
# Without --allow-host-loopback localhost stays the sandbox's own.
"$@" "$husk" sandbox --allow-host localhost:8080 -- sh -c 'echo "NO_PROXY=$NO_PROXY"'
kill $a
CHECK
chmod +x "$WORK/proxy-lo.sh"
if ! command -v curl >/dev/null; then
  skip "--allow-host localhost: curl is not installed"
else
  OUT=$(WORK=$WORK HOME_DIR=$HOME_DIR unshare --net --mount "$WORK/proxy-lo.sh" "$husk" "${AS_USER[@]}" 2>&1)
  want="NO_PROXY=127.0.0.1,::1
served
NO_PROXY=localhost,127.0.0.1,::1"
  [ "$OUT" = "$want" ] && pass "--allow-host localhost:PORT --allow-host-loopback: curl reaches the host's server through the proxy" ||
    fail "--allow-host localhost with --allow-host-loopback" "$want" "$OUT"
fi

# The resolver's error reaches the client (status and text) and the exit
# summary; 7bdf3ce said "cannot connect" for each. big.test's answer is
# truncated over UDP (asked again over TCP); a name server that is not
# there is said to be.
cat >"$WORK/proxy-dns-hosts" <<HOSTS
127.0.0.1 localhost
HOSTS
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$WORK/proxy-resolv"
printf 'nameserver 127.0.0.9\n' >"$WORK/proxy-resolv-none"
cat >"$WORK/proxy-dns.sh" <<'CHECK'
#!/bin/bash
husk=$1; shift
busybox ip link set lo up
mount --bind "$WORK/proxy-dns-hosts" /etc/hosts
mount --bind "$WORK/proxy-resolv" /etc/resolv.conf
python3 "$DNS_SERVER" 127.0.0.1 "$WORK/dns.ready" & d=$!
busybox httpd -f -p 127.0.0.2:8080 -h "$WORK/www" & a=$!
for _ in $(seq 100); do [ -e "$WORK/dns.ready" ] && bash -c 'exec 3<>/dev/tcp/127.0.0.2/8080' 2>/dev/null && break; sleep 0.1; done
cd "$HOME_DIR/proj" || exit 1
probe='for h in "$@"; do
  exec 3<>/dev/tcp/127.0.0.1/3128 || { echo "$h: no proxy"; continue; }
  printf "CONNECT $h:8080 HTTP/1.1\r\n\r\n" >&3; read -r s <&3
  [[ $s == *" 200 "* ]] && echo "$h: ${s%$'"'"'\r'"'"'}" || echo "$h: ${s%$'"'"'\r'"'"'} | $(tail -1 <&3)"
  exec 3>&-
done'
names="dns.test big.test noaddr.test fail.test slow.test nosuch.invalid"
allow=(); for h in $names; do allow+=(--allow-host "$h:8080"); done
"$@" "$husk" sandbox "${allow[@]}" --allow-host-loopback -- bash -c "$probe" probe $names
mount --bind "$WORK/proxy-resolv-none" /etc/resolv.conf
"$@" "$husk" sandbox --allow-host dns.test:8080 -- bash -c "$probe" probe dns.test
kill $a $d
CHECK
chmod +x "$WORK/proxy-dns.sh"
if ! command -v python3 >/dev/null; then
  skip "--allow-host name resolution: python3 (the test's DNS server) is not installed"
else
  rm -f "$WORK/dns.ready"
  OUT=$(WORK=$WORK HOME_DIR=$HOME_DIR DNS_SERVER=$repo/tests/sandbox/checks/dns-server.py \
    unshare --net --mount "$WORK/proxy-dns.sh" "$husk" "${AS_USER[@]}" 2>&1)
  want="dns.test: HTTP/1.1 200 Connection established
big.test: HTTP/1.1 200 Connection established
noaddr.test: HTTP/1.1 502 Bad Gateway | husk sandbox: cannot resolve noaddr.test:8080: the name has no address (no A or AAAA record)
fail.test: HTTP/1.1 502 Bad Gateway | husk sandbox: cannot resolve fail.test:8080: the name server failed (SERVFAIL)
slow.test: HTTP/1.1 504 Gateway Timeout | husk sandbox: cannot resolve slow.test:8080: no answer from the name servers of /etc/resolv.conf (timeout)
nosuch.invalid: HTTP/1.1 502 Bad Gateway | husk sandbox: cannot resolve nosuch.invalid:8080: no such name (NXDOMAIN)
husk sandbox: --allow-host could not resolve: noaddr.test:8080: the name has no address (no A or AAAA record) (1), fail.test:8080: the name server failed (SERVFAIL) (1), slow.test:8080: no answer from the name servers of /etc/resolv.conf (timeout) (1), nosuch.invalid:8080: no such name (NXDOMAIN) (1)
dns.test: HTTP/1.1 502 Bad Gateway | husk sandbox: cannot resolve dns.test:8080: no name server of /etc/resolv.conf could be reached
husk sandbox: --allow-host could not resolve: dns.test:8080: no name server of /etc/resolv.conf could be reached (1)"
  [ "$OUT" = "$want" ] && pass "--allow-host: names resolved by husk's own resolver (UDP, TCP when truncated); its errors reach the client and the exit summary" ||
    fail "--allow-host name resolution" "$want" "$OUT"
fi
