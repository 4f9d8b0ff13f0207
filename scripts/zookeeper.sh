#!/usr/bin/env bash
# Install and run a standalone ZooKeeper on the loopback interface, for the tests of isrcheck.impl.
#
#   scripts/zookeeper.sh install              install Debian's `zookeeper` package if it is missing
#   scripts/zookeeper.sh start PORT [DIR]     start a server on 127.0.0.1:PORT with its data under DIR
#                                             (a new temporary directory if omitted); waits until it
#                                             answers, prints `127.0.0.1:PORT DIR` on stdout
#   scripts/zookeeper.sh stop DIR             stop the server started with DIR (its pid is DIR/zookeeper.pid)
#
# The server listens on 127.0.0.1 only, has the admin web server and JMX disabled, and writes its log
# to DIR/zookeeper.log. Exit status: 0 on success, 1 on failure, with one line on stderr saying why.
set -euo pipefail

ZK_JAR=/usr/share/java/zookeeper.jar

die() { echo "zookeeper.sh: $*" >&2; exit 1; }
# shellcheck source=scripts/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"

install_zk() {
    if [[ -f "$ZK_JAR" ]] && command -v java >/dev/null 2>&1; then
        return 0
    fi
    apt_install zookeeper ZooKeeper
    [[ -f "$ZK_JAR" ]] || die "the zookeeper package did not provide $ZK_JAR"
    command -v java >/dev/null 2>&1 || die "java is not available after installing zookeeper"
}

answers() {  # answers PORT: the server replies imok to the four-letter word ruok
    local port=$1 reply
    reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'ruok' >&3 && timeout 2 cat <&3) 2>/dev/null || true)
    [[ "$reply" == "imok" ]]
}

start_zk() {
    local port=${1:-}
    local dir=${2:-}
    [[ "$port" =~ ^[0-9]+$ ]] && (( port > 0 && port < 65536 )) || die "start needs a port number, got '${port}'"
    install_zk
    if [[ -z "$dir" ]]; then dir=$(mktemp -d -t isrcheck-zk.XXXXXX); fi
    mkdir -p "$dir/data"
    if answers "$port"; then die "something already answers on 127.0.0.1:$port"; fi
    cat >"$dir/zoo.cfg" <<EOF
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=200
minSessionTimeout=1000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
EOF
    cat >"$dir/log4j.properties" <<EOF
log4j.rootLogger=WARN, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=$dir/zookeeper.log
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d %p %c{1}: %m%n
EOF
    # Debian's zookeeper.jar lists its dependencies in its manifest's Class-Path.
    nohup java -Xmx256m -XX:+UseSerialGC -Dzookeeper.jmx.log4j.disable=true \
        -Dlog4j.configuration="file:$dir/log4j.properties" -Dzookeeper.admin.enableServer=false \
        -cp "$ZK_JAR" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
        >"$dir/stdout.log" 2>&1 </dev/null &
    echo $! >"$dir/zookeeper.pid"
    local pid
    pid=$(cat "$dir/zookeeper.pid")
    for _ in $(seq 1 120); do
        if answers "$port"; then
            echo "127.0.0.1:$port $dir"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            die "the server exited during start-up: $(tail -n 1 "$dir/stdout.log" 2>/dev/null)"
        fi
        sleep 0.25
    done
    kill "$pid" 2>/dev/null || true
    die "the server did not answer on 127.0.0.1:$port within 30 s"
}

stop_zk() {
    local dir=${1:-}
    [[ -n "$dir" && -f "$dir/zookeeper.pid" ]] || die "stop needs the directory given to start"
    local pid
    pid=$(cat "$dir/zookeeper.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$dir/zookeeper.pid"; return 0; }
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/zookeeper.pid"
}

case "${1:-}" in
    install) install_zk ;;
    start) shift; start_zk "$@" ;;
    stop) shift; stop_zk "$@" ;;
    *) echo "usage: $0 install | start PORT [DIR] | stop DIR" >&2; exit 2 ;;
esac
