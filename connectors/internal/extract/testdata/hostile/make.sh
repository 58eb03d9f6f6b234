#!/bin/sh
# Regenerates the encrypted PDFs of this folder from ../fixtures/notes.pdf
# with qpdf (Debian 12: qpdf 11.3). Run from this folder: sh make.sh
set -eu
src=../fixtures/notes.pdf
# AES-256, a user password is needed to open it: Extract says ErrEncrypted.
qpdf --encrypt user-secret owner-secret 256 -- "$src" encrypted-password.pdf
# AES-256 with an empty user password (permissions only): any viewer
# opens it, and so does Extract.
qpdf --encrypt "" owner-secret 256 -- "$src" encrypted-empty-password.pdf
# RC4 128-bit with a user password: ErrEncrypted.
qpdf --allow-weak-crypto --encrypt user-secret owner-secret 128 --use-aes=n -- "$src" encrypted-rc4.pdf
ls -l *.pdf
