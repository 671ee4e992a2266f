# nginx.bash — a loopback nginx of a suite's own, for the HTTP suites and
# scripts/bench-remote.sh (`. tests/lib/nginx.bash`).
#
# nf_nginx_start DIR    start nginx with its config, pid, logs and temp
#                       paths under DIR, serving DIR/www over http on
#                       127.0.0.1:$NF_HTTP_PORT and, when DIR/cert.pem and
#                       DIR/key.pem exist, over https (HTTP/2 offered) on
#                       127.0.0.1:$NF_HTTPS_PORT; both ports are free ones
#                       (nf-httpfault --free-port); https://.../to-http/X
#                       redirects to http://.../ . The access log records
#                       each request's range, If-Range and whether an
#                       Authorization header came (never its value).
# nf_nginx_stop DIR     stop it (also when the suite failed half way).
# nf_nginx_cert DIR     make a CA and a server certificate for 127.0.0.1 and
#                       localhost with openssl (DIR/ca.pem, cert.pem, key.pem),
#                       and a second, unrelated CA (DIR/other-ca.pem).
#
# The system nginx that the Debian package may run on port 80 is never used
# or touched. Needs nginx (Debian's nginx-light) and the test tools.

nf_nginx_available() {
    command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]
}

nf_nginx_bin() {
    command -v nginx 2>/dev/null || echo /usr/sbin/nginx
}

nf_nginx_cert() {
    local d=$1
    (
        cd "$d" || exit 1
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=nf-test-ca \
            -keyout ca-key.pem -out ca.pem 2>/dev/null &&
        openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout key.pem \
            -out req.pem 2>/dev/null &&
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.ext &&
        openssl x509 -req -in req.pem -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
            -days 2 -extfile san.ext -out cert.pem 2>/dev/null &&
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=nf-other-ca \
            -keyout other-key.pem -out other-ca.pem 2>/dev/null
    )
}

nf_nginx_start() {
    local d user="" ssl=""
    mkdir -p "$1/www" "$1/tmp" "$1/logs"
    d=$(cd "$1" && pwd)
    NF_HTTP_PORT=$(nf-httpfault --free-port) || return 1
    NF_HTTPS_PORT=$(nf-httpfault --free-port) || return 1
    [ "$(id -u)" = 0 ] && user="user root;"
    if [ -e "$d/cert.pem" ]; then
        ssl="server { listen 127.0.0.1:$NF_HTTPS_PORT ssl http2; root $d/www;
                  ssl_certificate $d/cert.pem; ssl_certificate_key $d/key.pem;
                  location /to-http/ { return 302 http://127.0.0.1:$NF_HTTP_PORT/; } }"
    fi
    cat > "$d/nginx.conf" <<EOF
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log;
events { worker_connections 512; }
http {
    log_format nf '\$request_method \$uri range=\$http_range if_range=\$http_if_range auth=\$nf_auth status=\$status bytes=\$body_bytes_sent host=\$host proto=\$server_protocol conn=\$connection/\$connection_requests';
    map \$http_authorization \$nf_auth { "" none; default present; }
    access_log $d/logs/access.log nf;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    default_type application/octet-stream;
    types { }
    sendfile on;
    keepalive_requests 100000;
    server { listen 127.0.0.1:$NF_HTTP_PORT; root $d/www; }
    $ssl
}
EOF
    "$(nf_nginx_bin)" -p "$d" -c "$d/nginx.conf" -g "daemon on; $user" 2> "$d/logs/start.err" || {
        cat "$d/logs/start.err" >&2
        return 1
    }
    local i
    for i in $(seq 1 100); do
        [ -s "$d/nginx.pid" ] && nf-httpfault --probe "127.0.0.1:$NF_HTTP_PORT" && break
        sleep 0.05
    done
    export NF_HTTP_PORT NF_HTTPS_PORT
}

# nf_proxy_start NAME [RULE...] — an nf-httpfault in front of the nginx
# (after nf_nginx_start), its log NAME.log, its pid NAME.pid; sets NF_PROXY
# (its base URL). nf_proxy_stop NAME ends it.
nf_proxy_start() {
    local name=$1
    shift
    rm -f "$name.port"
    nf-httpfault --upstream "127.0.0.1:$NF_HTTP_PORT" --port-file "$name.port" \
        --pid-file "$name.pid" --log "$name.log" --lifetime 300 "$@" || return 1
    NF_PROXY=http://127.0.0.1:$(cat "$name.port")
}

# nf_log_wait FILE PATTERN [COUNT] — wait until FILE holds COUNT (default 1)
# lines matching PATTERN: nginx writes a request's access-log line once the
# response is out, which may be after the client has read it and exited.
# Fails after 10 s.
nf_log_wait() {
    local i n
    for i in $(seq 200); do
        n=$(grep -c -- "$2" "$1" 2> /dev/null || true)
        [ "${n:-0}" -ge "${3:-1}" ] && return 0
        sleep 0.05
    done
    echo "nf_log_wait: $1 has ${n:-0} lines matching '$2', not ${3:-1}" >&2
    return 1
}

nf_proxy_stop() {
    [ -s "$1.pid" ] && kill "$(cat "$1.pid")" 2> /dev/null || true
    rm -f "$1.pid"
    return 0
}

nf_nginx_stop() {
    local d=$1 pid
    [ -s "$d/nginx.pid" ] || return 0
    pid=$(cat "$d/nginx.pid")
    kill "$pid" 2> /dev/null || true
    local i
    for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$pid" 2> /dev/null || true
    rm -f "$d/nginx.pid"
    return 0
}
