/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers linked into siw_rs.ko: thin wrappers for static inline functions and macros
 * that Rust cannot call directly. Each one does exactly what its name says, nothing more.
 */
#ifndef SIW_RS_HELPERS_H
#define SIW_RS_HELPERS_H

struct ib_device;
struct ib_udata;
struct net_device;
struct notifier_block;

struct ib_device *siw_rs_ib_alloc_device(size_t size);
struct net_device *siw_rs_netdev_notifier_info_to_dev(void *info);
void siw_rs_addrconf_addr_eui48(u8 *eui, const u8 *addr);
void siw_rs_eth_random_addr(u8 *addr);
unsigned int siw_rs_num_possible_cpus(void);
int siw_rs_ib_mtu_int_to_enum(int mtu);
int siw_rs_ib_get_curr_port_state(struct net_device *ndev);
int siw_rs_ib_no_udata_io(struct ib_udata *udata);
unsigned short siw_rs_netdev_type(const struct net_device *ndev);
unsigned int siw_rs_netdev_mtu(const struct net_device *ndev);
void siw_rs_dev_put(struct net_device *ndev);
void siw_rs_get_ib_device(struct ib_device *ibdev);
void siw_rs_put_ib_device(struct ib_device *ibdev);
unsigned long siw_rs_page_size(void);
void siw_rs_ib_mark_name_assigned_by_user(struct ib_device *ibdev);
void *siw_rs_vmalloc_user(unsigned long size);
void *siw_rs_vzalloc(unsigned long size);
unsigned int siw_rs_page_shift(void);
struct ib_ucontext *siw_rs_udata_to_ucontext(struct ib_udata *udata);
struct uverbs_attr_bundle;
struct ib_udata *siw_rs_attrs_to_udata(struct uverbs_attr_bundle *attrs);
struct ib_umem *siw_rs_ib_umem_get_va(struct ib_device *dev, unsigned long addr, size_t size, int access);

struct ib_cq;
void siw_rs_cq_use(struct ib_cq *cq);
void siw_rs_cq_unuse(struct ib_cq *cq);
struct ib_qp;
bool siw_rs_qp_is_kernel(struct ib_qp *qp);


/*
 * Sockets. siw_rs takes over a connection's socket callbacks: each one calls
 * ctx->event(ctx->data, SIW_RS_SK_*) under sk_callback_lock (from softirq or process
 * context) and then the callback it replaced.
 */
struct socket;
struct sock;
struct kvec;
struct iw_cm_id;

enum siw_rs_sk_event {
	SIW_RS_SK_DATA = 1,
	SIW_RS_SK_WRITE = 2,
	SIW_RS_SK_STATE = 4,
};

struct siw_rs_sk_ctx {
	void (*event)(void *data, int what);
	void *data;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
};

int siw_rs_sock_listen(struct iw_cm_id *id, int backlog, struct socket **out);
int siw_rs_sock_connect(struct iw_cm_id *id, struct socket **out);
int siw_rs_sock_accept(struct socket *ls, struct socket **out);
void siw_rs_sock_attach(struct socket *s, struct siw_rs_sk_ctx *ctx);
void siw_rs_sock_detach(struct socket *s);
void siw_rs_sock_shutdown(struct socket *s);
void siw_rs_sock_release(struct socket *s);
/*
 * A piece of data to send: copied from @base, or, when @page is set, spliced from that
 * page (@base is then the piece's kernel address in it) without a copy.
 */
struct siw_rs_piece {
	const void *base;
	struct page *page;
	size_t len;
};

int siw_rs_sock_send(struct socket *s, const struct siw_rs_piece *p, size_t n, bool block,
		     bool more);
long siw_rs_sock_read(struct socket *s, void *ctx, size_t (*feed)(void *ctx, const u8 *p, size_t len));
/* 1: established, 0: connecting or listening, -errno or -ECONNRESET: gone. */
int siw_rs_sock_alive(struct socket *s);
unsigned int siw_rs_sock_mss(struct socket *s);

/* iw_cm */
int siw_rs_cm_upcall(struct iw_cm_id *id, struct socket *s, int event, int status,
		     const void *pd, u8 pd_len, u8 ird, u8 ord, void *provider_data);
void siw_rs_cm_id_get(struct iw_cm_id *id);
void siw_rs_cm_id_put(struct iw_cm_id *id);
void *siw_rs_cm_id_provider_data(struct iw_cm_id *id);
void siw_rs_cm_id_set_provider_data(struct iw_cm_id *id, void *data);

/* Pinned user memory. */
struct ib_umem;
struct page;
struct ib_device;
bool siw_rs_ib_device_try_get(struct ib_device *dev);
unsigned long siw_rs_umem_offset(struct ib_umem *umem);
size_t siw_rs_umem_num_pages(struct ib_umem *umem);
size_t siw_rs_umem_pages(struct ib_umem *umem, struct page **out, size_t n);
void *siw_rs_page_address(struct page *page);
struct page *siw_rs_virt_to_page(const void *addr);
bool siw_rs_virt_addr_valid(const void *addr);

u32 siw_rs_crc32c(u32 crc, const void *p, size_t len);

struct workqueue_struct;
struct workqueue_struct *siw_rs_wq_alloc(void);
void siw_rs_wq_destroy(struct workqueue_struct *wq);

struct ib_qp;
void siw_rs_qp_event(struct ib_qp *qp, int event);
void siw_rs_qp_srq_event(struct ib_qp *qp, int event);

#endif
