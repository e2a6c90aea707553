/* placeholder: the console's api.js */
