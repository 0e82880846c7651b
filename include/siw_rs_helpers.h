/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C helpers linked into siw_rs.ko (siw_rs/helpers/): as in the kernel's rust/helpers/,
 * rust_helper_NAME wraps the static inline function or macro NAME, which Rust cannot call
 * directly, and the bindings call it NAME. Each one does exactly what its name says.
 */
#ifndef SIW_RS_HELPERS_H
#define SIW_RS_HELPERS_H

struct ib_cq;
struct ib_device;
struct ib_qp;
struct ib_ucontext;
struct ib_udata;
struct ib_umem;
struct net;
struct net_device;
struct page;
struct sock;
struct socket;
struct spinlock;
struct uverbs_attr_bundle;
struct workqueue_struct;

/* RDMA core (helpers/rdma.c) */
/* ib_alloc_device() for a driver structure of @size bytes */
struct ib_device *rust_helper_ib_alloc_device(size_t size);
int rust_helper_ib_mtu_int_to_enum(int mtu);
int rust_helper_ib_get_curr_port_state(struct net_device *ndev);
int rust_helper_ib_no_udata_io(struct ib_udata *udata);
bool rust_helper_ib_device_try_get(struct ib_device *dev);
/* get_device()/put_device() on the ib_device's struct device (in an anonymous union) */
void rust_helper_ib_device_get_ref(struct ib_device *ibdev);
void rust_helper_ib_device_put_ref(struct ib_device *ibdev);
void rust_helper_ib_mark_name_assigned_by_user(struct ib_device *ibdev);
struct ib_ucontext *rust_helper_udata_to_ucontext(struct ib_udata *udata);
struct ib_udata *rust_helper_attrs_to_udata(struct uverbs_attr_bundle *attrs);
void rust_helper_cq_use(struct ib_cq *cq);
void rust_helper_cq_unuse(struct ib_cq *cq);
bool rust_helper_qp_is_kernel(struct ib_qp *qp);
struct ib_umem *rust_helper_ib_umem_get_va(struct ib_device *dev, unsigned long addr, size_t size,
				      int access);
unsigned long rust_helper_ib_umem_offset(struct ib_umem *umem);
size_t rust_helper_ib_umem_num_pages(struct ib_umem *umem);
size_t rust_helper_umem_pages(struct ib_umem *umem, struct page **out, size_t n);
struct nlattr;
struct sk_buff;
struct nlattr *rust_helper_nla_nest_start_noflag(struct sk_buff *skb, int attrtype);
int rust_helper_nla_nest_end(struct sk_buff *skb, struct nlattr *start);
void rust_helper_nla_nest_cancel(struct sk_buff *skb, struct nlattr *start);

/* Memory, CPUs, workqueues */
void *rust_helper_vmalloc_user(unsigned long size);
void *rust_helper_vzalloc(unsigned long size);
void *rust_helper_page_address(struct page *page);
struct page *rust_helper_virt_to_page(const void *addr);
bool rust_helper_virt_addr_valid(const void *addr);
bool rust_helper_sendpage_ok(struct page *page);
unsigned int rust_helper_num_possible_cpus(void);
struct workqueue_struct *rust_helper_alloc_workqueue(const char *name, unsigned int flags,
					     int max_active);
struct work_struct;
bool rust_helper_cancel_delayed_work_item(struct work_struct *work);

/* Network devices and sockets (helpers/net.c) */
struct net_device *rust_helper_netdev_notifier_info_to_dev(void *info);
void rust_helper_eth_random_addr(u8 *addr);
unsigned short rust_helper_netdev_type(const struct net_device *ndev);
unsigned int rust_helper_netdev_mtu(const struct net_device *ndev);
void rust_helper_dev_put(struct net_device *ndev);
struct net *rust_helper_dev_net(const struct net_device *ndev);
int rust_helper_netdev_ifindex(const struct net_device *ndev);
struct net_device *rust_helper_inetaddr_dev(void *ifa);
struct net_device *rust_helper_inet6addr_dev(void *ifa);
size_t rust_helper_netdev_ip_addrs(struct net_device *ndev, u8 (*out)[16], size_t max);

/* Sockets */
struct net *rust_helper_current_net(void);
int rust_helper_ip6_sock_set_v6only(struct sock *sk);
struct net *rust_helper_sock_net(const struct sock *sk);
void rust_helper_lock_sock(struct sock *sk);
void rust_helper_read_lock(rwlock_t *lock);
void rust_helper_read_unlock(rwlock_t *lock);
void rust_helper_read_lock_bh(rwlock_t *lock);
void rust_helper_read_unlock_bh(rwlock_t *lock);
void rust_helper_write_lock_bh(rwlock_t *lock);
void rust_helper_write_unlock_bh(rwlock_t *lock);
unsigned int rust_helper_tcp_mss(struct sock *sk);
u32 rust_helper_tcp_unacked(const struct sock *sk);
int rust_helper_sk_wmem_queued(const struct sock *sk);
struct wait_queue_head *rust_helper_sk_sleep(struct sock *sk);
/* struct sock fields (bindgen gets its layout wrong). */
struct rust_sk_callbacks {
	void (*data_ready)(struct sock *sk);
	void (*write_space)(struct sock *sk);
	void (*state_change)(struct sock *sk);
};
rwlock_t *rust_helper_sk_callback_lock(struct sock *sk);
void *rust_helper_sk_user_data(const struct sock *sk);
void rust_helper_sk_set_user_data(struct sock *sk, void *data);
void rust_helper_sk_callbacks(const struct sock *sk, struct rust_sk_callbacks *cb);
void rust_helper_sk_set_callbacks(struct sock *sk, const struct rust_sk_callbacks *cb);
int rust_helper_sk_err(const struct sock *sk);
int rust_helper_sk_state(const struct sock *sk);
void rust_helper_sk_set_bound_dev_if(struct sock *sk, int ifindex);
bool rust_helper_sk_hold_net(struct sock *sk);
/* a TCP stream socket: tcp_read_sock() may read it */
bool rust_helper_sk_is_tcp(const struct sock *sk);
int rust_helper_tcp_inq(struct sock *sk);
/* @len bytes of @skb at @off, if together in the direct map (else NULL) */
const u8 *rust_helper_skb_contiguous(const struct sk_buff *skb, unsigned int off,
				     unsigned int len);
bool rust_helper_maybe_get_net(struct net *net);
void rust_helper_put_net(struct net *net);

/* Locking with bottom halves off (helpers/sync.c) */
void rust_helper_spin_lock_bh(struct spinlock *lock);
void rust_helper_spin_unlock_bh(struct spinlock *lock);
int rust_helper_spin_trylock_bh(struct spinlock *lock);
void rust_helper_local_bh_disable(void);
void rust_helper_local_bh_enable(void);
bool rust_helper_in_softirq(void);

/* siw_rs/helpers/rdma.c: whether the current process has an open file whose private_data is @priv. */
bool siw_rs_current_holds(const void *priv);

/* siw_rs/helpers/log.c: the `debug` parameter; a message (a Rust fmt::Arguments), rate-limited. */
bool siw_rs_debug_on(void);
void siw_rs_log_debug(const void *args);
void siw_rs_log_warn(const void *args);

/* siw_rs/helpers/layout.c: entry @i of include/siw_rs_layout.h, measured in C; ~0UL past the end. */
unsigned long siw_rs_layout(unsigned int i);

#endif
