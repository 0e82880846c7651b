// SPDX-License-Identifier: GPL-2.0
/*
 * Networking helpers: network devices, their addresses, kernel TCP sockets.
 *
 * As in rust/helpers/: each rust_helper_NAME wraps a static inline function or macro that
 * Rust cannot call, and the bindings name it NAME (siw_rs/gen-bindings.sh). Each does exactly
 * what its name says; every decision is made in Rust.
 */
#include <linux/nsproxy.h>
#include <linux/etherdevice.h>
#include <linux/inetdevice.h>
#include <linux/net.h>
#include <linux/netdevice.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "siw_rs_helpers.h"

struct net_device *rust_helper_netdev_notifier_info_to_dev(void *info)
{
	return netdev_notifier_info_to_dev(info);
}

void rust_helper_eth_random_addr(u8 *addr)
{
	eth_random_addr(addr);
}

unsigned short rust_helper_netdev_type(const struct net_device *ndev)
{
	return ndev->type;
}

unsigned int rust_helper_netdev_mtu(const struct net_device *ndev)
{
	return READ_ONCE(ndev->mtu);
}

void rust_helper_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

struct net *rust_helper_dev_net(const struct net_device *ndev)
{
	return dev_net(ndev);
}

int rust_helper_netdev_ifindex(const struct net_device *ndev)
{
	return ndev->ifindex;
}

struct net_device *rust_helper_inetaddr_dev(void *ifa)
{
	return ((struct in_ifaddr *)ifa)->ifa_dev->dev;
}

struct net_device *rust_helper_inet6addr_dev(void *ifa)
{
	return ((struct inet6_ifaddr *)ifa)->idev->dev;
}

/*
 * Copies up to @max of @ndev's addresses to @out, IPv4 ones mapped into IPv6 (::ffff:a.b.c.d),
 * and returns how many: the address lists are walked with their own macros, under their own
 * locks. Addresses that failed duplicate address detection are left out.
 */
size_t rust_helper_netdev_ip_addrs(struct net_device *ndev, u8 (*out)[16], size_t max)
{
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;
	struct in6_addr a;
	size_t n = 0;

	rcu_read_lock();
	in_dev = __in_dev_get_rcu(ndev);
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			if (n == max)
				break;
			ipv6_addr_set_v4mapped(ifa->ifa_local, &a);
			memcpy(out[n++], &a, sizeof(a));
		}
	}
	rcu_read_unlock();
#if IS_ENABLED(CONFIG_IPV6)
	{
		struct inet6_dev *idev = in6_dev_get(ndev);
		struct inet6_ifaddr *ifp;

		if (idev) {
			read_lock_bh(&idev->lock);
			list_for_each_entry(ifp, &idev->addr_list, if_list) {
				if (n == max)
					break;
				if (ifp->flags & IFA_F_DADFAILED)
					continue;
				memcpy(out[n++], &ifp->addr, sizeof(ifp->addr));
			}
			read_unlock_bh(&idev->lock);
			in6_dev_put(idev);
		}
	}
#endif
	return n;
}

/* The network namespace of the calling task (where sock_create() makes a socket). */
struct net *rust_helper_current_net(void)
{
	return current->nsproxy->net_ns;
}

int rust_helper_ip6_sock_set_v6only(struct sock *sk)
{
	return ip6_sock_set_v6only(sk);
}

struct net *rust_helper_sock_net(const struct sock *sk)
{
	return sock_net(sk);
}

void rust_helper_lock_sock(struct sock *sk)
{
	lock_sock(sk);
}

void rust_helper_read_lock(rwlock_t *lock)
{
	read_lock(lock);
}

void rust_helper_read_unlock(rwlock_t *lock)
{
	read_unlock(lock);
}

void rust_helper_read_lock_bh(rwlock_t *lock)
{
	read_lock_bh(lock);
}

void rust_helper_read_unlock_bh(rwlock_t *lock)
{
	read_unlock_bh(lock);
}

void rust_helper_write_lock_bh(rwlock_t *lock)
{
	write_lock_bh(lock);
}

void rust_helper_write_unlock_bh(rwlock_t *lock)
{
	write_unlock_bh(lock);
}

bool rust_helper_sendpage_ok(struct page *page)
{
	return sendpage_ok(page);
}

unsigned int rust_helper_tcp_mss(struct sock *sk)
{
	return tcp_sk(sk)->mss_cache;
}

/* Bytes written but not acknowledged by the peer yet (SIOCOUTQ, read as tcp_ioctl does). */
u32 rust_helper_tcp_unacked(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return READ_ONCE(tp->write_seq) - READ_ONCE(tp->snd_una);
}

/* The wait queue of a socket's sleepers (poll and blocking calls wait there). */
struct wait_queue_head *rust_helper_sk_sleep(struct sock *sk)
{
	return sk_sleep(sk);
}

/* What a socket's send queue holds (SCTP frees a chunk once the peer acknowledged it). */
int rust_helper_sk_wmem_queued(const struct sock *sk)
{
	return READ_ONCE(sk->sk_wmem_queued);
}

/*
 * Fields of struct sock, whose layout bindgen does not reproduce (it comes out 64 bytes
 * short before sk_callback_lock), so Rust never touches the struct directly.
 */
rwlock_t *rust_helper_sk_callback_lock(struct sock *sk)
{
	return &sk->sk_callback_lock;
}

void *rust_helper_sk_user_data(const struct sock *sk)
{
	return sk->sk_user_data;
}

void rust_helper_sk_set_user_data(struct sock *sk, void *data)
{
	sk->sk_user_data = data;
}

void rust_helper_sk_callbacks(const struct sock *sk, struct rust_sk_callbacks *cb)
{
	cb->data_ready = sk->sk_data_ready;
	cb->write_space = sk->sk_write_space;
	cb->state_change = sk->sk_state_change;
}

void rust_helper_sk_set_callbacks(struct sock *sk, const struct rust_sk_callbacks *cb)
{
	sk->sk_data_ready = cb->data_ready;
	sk->sk_write_space = cb->write_space;
	sk->sk_state_change = cb->state_change;
}

int rust_helper_sk_err(const struct sock *sk)
{
	return READ_ONCE(sk->sk_err);
}

int rust_helper_sk_state(const struct sock *sk)
{
	return READ_ONCE(sk->sk_state);
}

bool rust_helper_sk_is_tcp(const struct sock *sk)
{
	return sk->sk_type == SOCK_STREAM && sk->sk_protocol == IPPROTO_TCP;
}

int rust_helper_tcp_inq(struct sock *sk)
{
	return tcp_inq(sk);
}

/*
 * The address of @len bytes of @skb at @off if they lie together in its head or in one of
 * its page fragments, in the kernel's direct map; NULL if not (the caller walks them with
 * skb_seq_read(), which maps what it must). The order is skb_seq_read()'s: the head, then
 * the fragments; bytes in the frag_list are never together here.
 */
const u8 *rust_helper_skb_contiguous(const struct sk_buff *skb, unsigned int off,
				     unsigned int len)
{
	const struct skb_shared_info *sh = skb_shinfo(skb);
	unsigned int head = skb_headlen(skb), i;

	if (off < head)
		return len <= head - off ? skb->data + off : NULL;
	if (!skb_frags_readable(skb))
		return NULL;
	off -= head;
	for (i = 0; i < sh->nr_frags; i++) {
		const skb_frag_t *frag = &sh->frags[i];
		unsigned int size = skb_frag_size(frag);
		struct page *page;

		if (off >= size) {
			off -= size;
			continue;
		}
		page = skb_frag_page(frag);
		if (len > size - off || !page || skb_frag_must_loop(page) || !page_address(page))
			return NULL;
		return (const u8 *)page_address(page) + skb_frag_off(frag) + off;
	}
	return NULL;
}

/* Makes @sk hold a reference on its namespace, if it does not (a socket accepted from a
 * kernel listener); false if the namespace is already going away. */
bool rust_helper_sk_hold_net(struct sock *sk)
{
	struct net *net = sock_net(sk);

	if (sk->sk_net_refcnt)
		return true;
	if (!maybe_get_net(net))
		return false;
	sk_net_refcnt_upgrade(sk);
	put_net(net);
	return true;
}

/* A reference on @net, unless it is already going away (maybe_get_net). */
bool rust_helper_maybe_get_net(struct net *net)
{
	return maybe_get_net(net) != NULL;
}

void rust_helper_put_net(struct net *net)
{
	put_net(net);
}

void rust_helper_sk_set_bound_dev_if(struct sock *sk, int ifindex)
{
	sk->sk_bound_dev_if = ifindex;
}
