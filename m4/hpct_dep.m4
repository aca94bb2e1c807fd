dnl hpct_dep.m4: helpers shared by the dependency checks (m4/hpct_check_*.m4).

dnl HPCT_DEP_FLAGS(NAME, DIR, LIB): -I/-L flags for a dependency installed under DIR.
AC_DEFUN([HPCT_DEP_FLAGS], [
    $1_CFLAGS="-I$2/include"
    if test -d "$2/lib64"; then $1_LIBS="-L$2/lib64 -Wl,-rpath,$2/lib64 $3"; else $1_LIBS="-L$2/lib -Wl,-rpath,$2/lib $3"; fi
])

dnl HPCT_DEP_CHECK(NAME, HEADER, FUNCTION, DEBIAN-PACKAGE): prove that the flags compile and link.
AC_DEFUN([HPCT_DEP_CHECK], [
    hpct_save_CPPFLAGS="$CPPFLAGS"; hpct_save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $$1_CFLAGS"; LIBS="$$1_LIBS $LIBS"
    AC_CHECK_HEADER([$2], [], [AC_MSG_ERROR([$1: cannot find $2 (flags: $$1_CFLAGS). Install the Debian package $4 or pass --with-]m4_tolower($1)[=DIR.])])
    AC_MSG_CHECKING([whether $1 links ($3)])
    AC_LINK_IFELSE([AC_LANG_CALL([], [$3])], [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no]); AC_MSG_ERROR([$1: cannot link $3 with "$$1_LIBS". Install the Debian package $4 or pass --with-]m4_tolower($1)[=DIR.])])
    CPPFLAGS="$hpct_save_CPPFLAGS"; LIBS="$hpct_save_LIBS"
])

dnl HPCT_DEP_PKG(NAME, OPTION, PKG-MODULES, DEFAULT-LIB, DEBIAN-PACKAGE, DESCRIPTION):
dnl --with-OPTION=DIR, else pkg-config on each of PKG-MODULES (space-separated) in turn.
AC_DEFUN([HPCT_DEP_PKG], [
    AC_ARG_WITH([$2], [AS_HELP_STRING([--with-$2=DIR], [$6])])
    if test -n "$with_$2" && test "$with_$2" != yes; then
        HPCT_DEP_FLAGS([$1], [$with_$2], [$4])
    else
        hpct_found=no
        for hpct_pkg in $3; do
            if test "$hpct_found" = no && $PKG_CONFIG --exists "$hpct_pkg"; then
                PKG_CHECK_MODULES([$1], [$hpct_pkg], [hpct_found=yes], [])
            fi
        done
        test "$hpct_found" = yes ||
            AC_MSG_ERROR([$1: pkg-config found none of: $3. Install the Debian package $5 or pass --with-$2=DIR.])
    fi
])
