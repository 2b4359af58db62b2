// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * no_tls.c: the GnuTLS functions Debian's static libmicrohttpd references, for `make bundle`.
 * gpusnoop's metrics endpoint serves plain HTTP (it never passes MHD_USE_TLS), so no TLS code
 * runs; linking GnuTLS statically would add its whole stack (nettle, gmp, p11-kit, ...) for
 * nothing. Each call fails with GNUTLS_E_UNIMPLEMENTED_FEATURE, except the library-wide set-up
 * libmicrohttpd's constructor makes (it panics when that fails).
 */
#include <stddef.h>
#include <stdlib.h>

#define GS_NO_TLS (-1250) /* GNUTLS_E_UNIMPLEMENTED_FEATURE */

/* one stub per name: any arguments, ignored; the error, or nothing for void functions */
#define NO_TLS(name)              \
	int name(void);           \
	int name(void)            \
	{                         \
		return GS_NO_TLS; \
	}

NO_TLS(gnutls_bye)
NO_TLS(gnutls_certificate_allocate_credentials)
NO_TLS(gnutls_certificate_free_credentials)
NO_TLS(gnutls_certificate_server_set_request)
NO_TLS(gnutls_certificate_set_dh_params)
NO_TLS(gnutls_certificate_set_retrieve_function2)
NO_TLS(gnutls_certificate_set_retrieve_function3)
NO_TLS(gnutls_certificate_set_x509_key_mem)
NO_TLS(gnutls_certificate_set_x509_key_mem2)
NO_TLS(gnutls_certificate_set_x509_trust_mem)
NO_TLS(gnutls_credentials_set)
NO_TLS(gnutls_deinit)
NO_TLS(gnutls_dh_params_deinit)
NO_TLS(gnutls_dh_params_import_pkcs3)
NO_TLS(gnutls_dh_params_init)
NO_TLS(gnutls_handshake)
NO_TLS(gnutls_init)
NO_TLS(gnutls_priority_deinit)
NO_TLS(gnutls_priority_init)
NO_TLS(gnutls_priority_set)
NO_TLS(gnutls_psk_allocate_server_credentials)
NO_TLS(gnutls_psk_free_server_credentials)
NO_TLS(gnutls_psk_set_server_credentials_function)
NO_TLS(gnutls_record_check_pending)
NO_TLS(gnutls_record_get_direction)
NO_TLS(gnutls_record_recv)
NO_TLS(gnutls_record_send)
NO_TLS(gnutls_session_set_ptr)
NO_TLS(gnutls_transport_set_int2)
NO_TLS(gnutls_alpn_set_protocols)

/* MHD_init, run as libmicrohttpd's constructor, panics unless this succeeds */
int gnutls_global_init(void);
int gnutls_global_init(void)
{
	return 0;
}

void gnutls_global_deinit(void);
void gnutls_global_deinit(void)
{
}

/* no cipher and no protocol: GNUTLS_CIPHER_UNKNOWN, GNUTLS_VERSION_UNKNOWN */
int gnutls_cipher_get(void);
int gnutls_cipher_get(void)
{
	return 0;
}

int gnutls_protocol_get_version(void);
int gnutls_protocol_get_version(void)
{
	return 0xff;
}

void *gnutls_session_get_ptr(void);
void *gnutls_session_get_ptr(void)
{
	return NULL;
}

const char *gnutls_strerror(int error);
const char *gnutls_strerror(int error)
{
	return "TLS is not built into this gpusnoop (make bundle)";
}

/* a variable in GnuTLS: its allocator */
void *(*gnutls_malloc)(size_t) = malloc;
