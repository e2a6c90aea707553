/* placeholder: the console's scripts.js */
