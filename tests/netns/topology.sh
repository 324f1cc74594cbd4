# Sourced by run.sh and lul.sh (root): two end namespaces $A and $B joined
# through a router namespace $R with veth pairs ${id}a0-${id}a1 (A-R) and
# ${id}b0-${id}b1 (R-B), A at $ipa on 10.$net.1.0/24 and B at $ipb on
# 10.$net.2.0/24, R forwarding. The caller sets id, A, B, R, net, ipa, ipb
# and removes the namespaces on exit.
for n in "$A" "$B" "$R"; do ip netns add "$n"; ip -n "$n" link set lo up; done
ip link add "${id}a0" type veth peer name "${id}a1"
ip link add "${id}b0" type veth peer name "${id}b1"
ip link set "${id}a0" netns "$A"; ip link set "${id}a1" netns "$R"
ip link set "${id}b0" netns "$B"; ip link set "${id}b1" netns "$R"
ip -n "$A" addr add "$ipa/24" dev "${id}a0"; ip -n "$A" link set "${id}a0" up
ip -n "$B" addr add "$ipb/24" dev "${id}b0"; ip -n "$B" link set "${id}b0" up
ip -n "$R" addr add "10.$net.1.1/24" dev "${id}a1"; ip -n "$R" link set "${id}a1" up
ip -n "$R" addr add "10.$net.2.1/24" dev "${id}b1"; ip -n "$R" link set "${id}b1" up
ip -n "$A" route add default via "10.$net.1.1"
ip -n "$B" route add default via "10.$net.2.1"
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
