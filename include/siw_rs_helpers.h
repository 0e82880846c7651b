/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers linked into siw_rs.ko: thin wrappers for static inline functions and macros
 * that Rust cannot call directly. Each one does exactly what its name says, nothing more.
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
struct uverbs_attr_bundle;
struct workqueue_struct;

/* RDMA core */
struct ib_device *siw_rs_ib_alloc_device(size_t size);
int siw_rs_ib_mtu_int_to_enum(int mtu);
int siw_rs_ib_get_curr_port_state(struct net_device *ndev);
int siw_rs_ib_no_udata_io(struct ib_udata *udata);
void siw_rs_get_ib_device(struct ib_device *ibdev);
void siw_rs_put_ib_device(struct ib_device *ibdev);
bool siw_rs_ib_device_try_get(struct ib_device *dev);
bool siw_rs_module_present(const char *name);
void siw_rs_ib_mark_name_assigned_by_user(struct ib_device *ibdev);
struct ib_ucontext *siw_rs_udata_to_ucontext(struct ib_udata *udata);
struct ib_udata *siw_rs_attrs_to_udata(struct uverbs_attr_bundle *attrs);
void siw_rs_cq_use(struct ib_cq *cq);
void siw_rs_cq_unuse(struct ib_cq *cq);
bool siw_rs_qp_is_kernel(struct ib_qp *qp);
struct ib_umem *siw_rs_ib_umem_get_va(struct ib_device *dev, unsigned long addr, size_t size,
				      int access);
unsigned long siw_rs_umem_offset(struct ib_umem *umem);
size_t siw_rs_umem_num_pages(struct ib_umem *umem);
size_t siw_rs_umem_pages(struct ib_umem *umem, struct page **out, size_t n);

/* Memory */
void *siw_rs_vmalloc_user(unsigned long size);
void *siw_rs_vzalloc(unsigned long size);
void *siw_rs_page_address(struct page *page);
struct page *siw_rs_virt_to_page(const void *addr);
bool siw_rs_virt_addr_valid(const void *addr);
bool siw_rs_sendpage_ok(struct page *page);
u32 siw_rs_crc32c(u32 crc, const void *p, size_t len);
unsigned int siw_rs_num_possible_cpus(void);
struct workqueue_struct *siw_rs_wq_alloc(const char *name);
void siw_rs_wq_destroy(struct workqueue_struct *wq);
struct work_struct;
bool siw_rs_cancel_delayed_work(struct work_struct *work);

/* Network devices */
struct net_device *siw_rs_netdev_notifier_info_to_dev(void *info);
void siw_rs_eth_random_addr(u8 *addr);
unsigned short siw_rs_netdev_type(const struct net_device *ndev);
unsigned int siw_rs_netdev_mtu(const struct net_device *ndev);
void siw_rs_dev_put(struct net_device *ndev);
struct net *siw_rs_dev_net(const struct net_device *ndev);
int siw_rs_netdev_ifindex(const struct net_device *ndev);
struct net_device *siw_rs_inetaddr_dev(void *ifa);
struct net_device *siw_rs_inet6addr_dev(void *ifa);
size_t siw_rs_netdev_ip_addrs(struct net_device *ndev, u8 (*out)[16], size_t max);

/* Sockets */
void siw_rs_sock_set_rdma_lock_class(struct socket *s);
int siw_rs_ip6_sock_set_v6only(struct sock *sk);
struct net *siw_rs_sock_net(const struct sock *sk);
void siw_rs_lock_sock(struct sock *sk);
void siw_rs_read_lock_bh(rwlock_t *lock);
void siw_rs_read_unlock_bh(rwlock_t *lock);
void siw_rs_write_lock_bh(rwlock_t *lock);
void siw_rs_write_unlock_bh(rwlock_t *lock);
unsigned int siw_rs_tcp_mss(struct sock *sk);
u32 siw_rs_tcp_unacked(const struct sock *sk);
/* struct sock fields (bindgen gets its layout wrong). */
struct siw_rs_sk_callbacks {
	void (*data_ready)(struct sock *sk);
	void (*write_space)(struct sock *sk);
	void (*state_change)(struct sock *sk);
};
rwlock_t *siw_rs_sk_callback_lock(struct sock *sk);
void *siw_rs_sk_user_data(const struct sock *sk);
void siw_rs_sk_set_user_data(struct sock *sk, void *data);
void siw_rs_sk_callbacks(const struct sock *sk, struct siw_rs_sk_callbacks *cb);
void siw_rs_sk_set_callbacks(struct sock *sk, const struct siw_rs_sk_callbacks *cb);
int siw_rs_sk_err(const struct sock *sk);
int siw_rs_sk_state(const struct sock *sk);
void siw_rs_sk_set_bound_dev_if(struct sock *sk, int ifindex);
bool siw_rs_sk_hold_net(struct sock *sk);
bool siw_rs_maybe_get_net(struct net *net);
void siw_rs_put_net(struct net *net);

/* The layout check: entry @i of include/siw_rs_layout.h, measured in C; ~0UL past the end. */
unsigned long siw_rs_layout(unsigned int i);

#endif
