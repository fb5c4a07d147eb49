/* SPDX-License-Identifier: MIT */
/* Unit tests for control/events/wh_sign.c: HMAC-SHA256 against RFC 4231's
 * vectors, and the Kiln-Signature header against a value computed with
 * Python's hmac module (API.md's recipe for receivers). */
#include <check.h>
#include <string.h>

#include "events/wh_sign.h"

START_TEST(rfc4231_vectors)
{
	char out[WH_HEX_LEN + 1];
	unsigned char key1[20];

	memset(key1, 0x0b, sizeof(key1));
	wh_hmac_hex(key1, sizeof(key1), "Hi There", 8, out);
	ck_assert_str_eq(out, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	wh_hmac_hex("Jefe", 4, "what do ya want for nothing?", 28, out);
	ck_assert_str_eq(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}
END_TEST

START_TEST(signature_header)
{
	static const char key[] = "0123456789abcdef-secret", body[] = "{\"id\":1}";
	char out[128];
	int n = wh_signature(key, strlen(key), 1767323045, body, strlen(body), out, sizeof(out));

	/* python3: hmac.new(key, b"1767323045." + body, hashlib.sha256).hexdigest() */
	ck_assert_str_eq(out, "t=1767323045,v1="
	                      "414f987de306ccc7506656f066061a413db69a0a4d7d1e56e310b8c2d9c6dace");
	ck_assert_int_eq(n, (int)strlen(out));
	/* another body, another signature; a buffer too small is refused */
	wh_signature(key, strlen(key), 1767323045, "{\"id\":2}", 8, out, sizeof(out));
	ck_assert_ptr_null(strstr(out, "414f987de306"));
	ck_assert_int_eq(wh_signature(key, strlen(key), 1, body, strlen(body), out, 40), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wh_sign");
	TCase *tc = tcase_create("wh_sign");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, rfc4231_vectors);
	tcase_add_test(tc, signature_header);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
