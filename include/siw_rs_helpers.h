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

#endif
